"""LLMs: packaged GGUF files (locate, join, verify), the embedded llama.cpp chat model, Ollama."""
