"""Chat model backends behind langchain-core's ``BaseChatModel``.

- :class:`EmbeddedChatModel`: llama.cpp (llama-cpp-python) with a packaged GGUF, no server.
  ``invoke(messages, format=<JSON schema>)`` constrains the output to the schema (grammar).
- Ollama: ``langchain_ollama.ChatOllama`` with ``num_ctx`` set explicitly so prompts are never
  silently truncated; ``format=<schema>`` works the same way.
Both are the model's door: a failed call (llama.cpp's runtime errors; httpx's and ollama's when the server went away)
is one :class:`~thread_rag.errors.ModelCallError` or ``ModelUnavailableError`` naming what failed, so the answer path
catches those, not ``Exception``; a bug of ours passes through as itself.
``make_chat_model`` detects (never assumes) which one to use and ``describe`` says which.
"""
from __future__ import annotations

import contextlib
import json
import sys
import urllib.error
import urllib.request
from typing import Any, Iterator

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from ..errors import ModelUnavailableError, SettingsError, failing_as
from .model_files import MODELS, load_llama, load_vocab, model_label

ROLE = {"human": "user", "ai": "assistant", "system": "system", "tool": "user"}


def to_openai_messages(messages: list[BaseMessage]) -> list[dict]:
    out = []
    for m in messages:
        role = ROLE.get(m.type, "user")
        content = m.content if isinstance(m.content, str) else json.dumps(m.content)
        if m.type == "tool":
            content = f"<tool_result>\n{content}\n</tool_result>"
        if out and out[-1]["role"] == role and role == "user":
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    return out


class EmbeddedChatModel(BaseChatModel):
    """llama.cpp in-process. Greedy decoding at temperature 0 (repeatable)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    model_name: str = "qwen2.5-coder-1.5b"
    settings: Any = None
    temperature: float = 0.0
    max_tokens: int = 400
    n_ctx: int = 8192
    _llama: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-embedded"

    @property
    def llama(self):
        if self._llama is None:
            self._llama = load_llama(self.settings, self.model_name, n_ctx=self.n_ctx)
        return self._llama

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` to this model, from a vocabulary-only load of its file: counting never waits for the
        weights, and never uses the weights' instance, which another thread may be running (the chat's background
        load evaluates the prompt head)."""
        return len(load_vocab(self.settings, self.model_name).tokenize(text.encode("utf-8"), add_bos=False))

    def _params(self, messages, stop, kwargs) -> dict:
        p: dict = {"messages": to_openai_messages(messages), "temperature": self.temperature,
                   "max_tokens": int(kwargs.get("max_tokens") or self.max_tokens), "seed": 0}
        if self.temperature == 0:
            p["top_k"] = 1
        if stop:
            p["stop"] = stop
        fmt = kwargs.get("format")
        if isinstance(fmt, dict):
            p["response_format"] = {"type": "json_object", "schema": fmt}
        elif fmt == "json":
            p["response_format"] = {"type": "json_object"}
        return p

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        params = self._params(messages, stop, kwargs)
        with failing_as("llama.cpp", LLAMA_ERRORS):
            r = self.llama.create_chat_completion(**params)
        text = r["choices"][0]["message"].get("content") or ""
        u = r.get("usage") or {}
        msg = AIMessage(content=text, usage_metadata={"input_tokens": u.get("prompt_tokens", 0),
                                                       "output_tokens": u.get("completion_tokens", 0),
                                                       "total_tokens": u.get("total_tokens", 0)})
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _stream(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        params = self._params(messages, stop, kwargs)
        with failing_as("llama.cpp", LLAMA_ERRORS):
            yield from self._parts(params, run_manager)

    def _parts(self, params: dict, run_manager) -> Iterator[ChatGenerationChunk]:
        for part in self.llama.create_chat_completion(stream=True, **params):
            delta = part["choices"][0].get("delta", {}).get("content") or ""
            if delta:
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                if run_manager:
                    run_manager.on_llm_new_token(delta, chunk=chunk)
                yield chunk
            if part["choices"][0].get("finish_reason"):  # "length" when max_tokens stopped it
                yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata={
                    "finish_reason": part["choices"][0]["finish_reason"]}))


LLAMA_ERRORS = (RuntimeError, ValueError, OSError)  # what llama.cpp raises when a call fails (context full, decode)


@contextlib.contextmanager
def ollama_door(host: str, model: str, instead: str = "CHAT_BACKEND=embedded"):
    """A failed Ollama call (the server gone, an error reply) as one ModelUnavailableError naming the server, as a
    failed start is, and ``instead``, the setting that does without Ollama. Only the client's own errors: a bug of
    ours (a TypeError) stays what it is."""
    import httpx
    import ollama

    try:
        yield
    except (httpx.HTTPError, ollama.ResponseError, OSError, ValueError) as exc:
        raise ollama_error(exc, host, model, instead=instead) from exc


def _ollama_chat(**kwargs):
    """``ChatOllama`` whose failed calls are one ModelUnavailableError naming the server (``ollama_door``)."""
    from langchain_ollama import ChatOllama

    class OllamaChat(ChatOllama):
        def _generate(self, *args, **kw):
            with ollama_door(self.base_url, self.model):
                return super()._generate(*args, **kw)

        def _stream(self, *args, **kw):
            with ollama_door(self.base_url, self.model):
                yield from super()._stream(*args, **kw)

    return OllamaChat(**kwargs)


def is_ollama(model) -> bool:
    """Whether ``model`` is a ChatOllama (imported only if langchain_ollama already is)."""
    mod = sys.modules.get("langchain_ollama")
    return mod is not None and isinstance(model, mod.ChatOllama)


def ollama_reachable(host: str, timeout: float = 1.5) -> tuple[bool, list[str], str]:
    """(reachable, model names, error) from GET {host}/api/tags."""
    url = host.rstrip("/") + "/api/tags"
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - user-configured local URL
            data = json.loads(resp.read().decode("utf-8") or "{}")
        return True, [m.get("name", "") for m in data.get("models", [])], ""
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return False, [], str(getattr(exc, "reason", exc))


def ollama_error(exc: Exception, host: str, model: str, instead: str) -> ModelUnavailableError:
    """One line for a failed Ollama call to ``host``; ``instead``: the setting that does without Ollama."""
    text = str(exc).strip()
    if text.startswith("<"):  # a web page: another server answers there
        return ModelUnavailableError(f"the server at {host} is not Ollama (it answered with a web page); "
                                     f"check OLLAMA_HOST, or set {instead}")
    if "not found" in text.lower() or "404" in text:
        return ModelUnavailableError(f"Ollama at {host} has no model '{model}': run `ollama pull {model}`")
    return ModelUnavailableError(f"Ollama request failed at {host} "
                                 f"({text.splitlines()[0][:160] if text else type(exc).__name__}); "
                                 f"is `ollama serve` running? or set {instead}")


def ollama_model_name(settings) -> str:
    return "qwen2.5-coder:1.5b" if settings.MAIN_MODEL in MODELS else settings.MAIN_MODEL


def make_chat_model(settings) -> BaseChatModel:
    backend = settings.CHAT_BACKEND
    host, passed_over = "", ""  # passed_over: why auto did not take the Ollama it was pointed at
    if backend in ("auto", "ollama"):
        try:
            host = settings.ollama_host
        except SettingsError as exc:
            if backend == "ollama":
                raise
            passed_over = str(exc)
    if backend in ("auto", "ollama") and host:
        ok, names, err = ollama_reachable(host)
        model = ollama_model_name(settings)
        if ok:
            if model not in names and f"{model}:latest" not in names:  # none pulled yet: not ours either
                if backend == "ollama":
                    raise ModelUnavailableError(f"Ollama at {host} has no model '{model}': run `ollama pull {model}` "
                                                f"(it has: {', '.join(names[:8]) or 'none'})")
                passed_over = f"Ollama at {host} has no model '{model}'"
            else:
                m = _ollama_chat(model=model, base_url=host, num_ctx=settings.OLLAMA_NUM_CTX,
                                 temperature=settings.TEMPERATURE, num_predict=settings.MAX_ANSWER_TOKENS, seed=0)
                m.metadata = {"backend": f"Ollama at {host}", "model": model, "ctx": settings.OLLAMA_NUM_CTX}
                return m
        elif backend == "ollama":
            raise ModelUnavailableError(f"Ollama is not reachable at {host} ({err}); start `ollama serve` "
                                        f"or set CHAT_BACKEND=embedded")
        else:
            passed_over = f"Ollama at {host} not reachable"
    elif backend == "ollama":
        raise ModelUnavailableError("CHAT_BACKEND=ollama needs OLLAMA_HOST (e.g. http://127.0.0.1:11434)")
    m = EmbeddedChatModel(model_name=settings.MAIN_MODEL, settings=settings, temperature=settings.TEMPERATURE,
                          max_tokens=settings.MAX_ANSWER_TOKENS, n_ctx=settings.LLM_CTX)
    m.metadata = {"backend": f"embedded llama.cpp ({passed_over or 'no server'})", "model": model_label(settings.MAIN_MODEL),
                  "ctx": settings.LLM_CTX}
    return m


def describe(model: BaseChatModel) -> str:
    md = model.metadata or {}
    return f"{md.get('backend', type(model).__name__)} · {md.get('model', '?')} · context {md.get('ctx', '?')} tokens"


def limit(model, max_tokens: int, stop: list[str] | None = None) -> dict:
    """Keyword arguments that cap one call's output at ``max_tokens`` (and end it at a ``stop`` string) for this
    backend. llama.cpp takes ``max_tokens`` and ``stop``; Ollama takes ``num_predict`` and ``stop`` inside ``options``
    (``ChatOllama`` forwards unknown keywords to ``ollama.Client.chat``, which rejects them, and drops its own
    ``stop`` when ``options`` are given), so the model's own options are repeated there."""
    if not is_ollama(model):
        return {"max_tokens": int(max_tokens), **({"stop": list(stop)} if stop else {})}
    opts = {"num_ctx": model.num_ctx, "temperature": model.temperature, "seed": model.seed,
            "num_predict": int(max_tokens), "stop": list(stop) if stop else None}
    return {"options": {k: v for k, v in opts.items() if v is not None}}


def reset_prompt_cache(model) -> None:
    """Forget llama.cpp's evaluated prompt, so the next call pays for its whole prompt (benchmarks)."""
    if isinstance(model, EmbeddedChatModel) and model._llama is not None:
        model._llama.reset()

