"""The answer prompt's fixed head is evaluated once (REPL start) and reused by llama.cpp for every answer:
checked on the real embedded model, at the token level (the head's tokens are a prefix of a real answer
prompt's tokens, which is when llama.cpp reuses an evaluated prefix)."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_warm_prefix_tokens_are_a_prefix_of_every_answer_prompt(settings_for):
    from thread_rag.agent.answer import Source, answer_messages, number, warm_prefix
    from thread_rag.llm.backends import limit, make_chat_model

    model = make_chat_model(settings_for(CHAT_BACKEND="embedded", MODEL_DIR=str(REPO / "local_rag_db" / "models")))
    n = warm_prefix(model)
    head = list(model.llama._input_ids)
    assert n >= 40 and len(head) >= n  # the head's prompt tokens are in the context
    for question, text in (("How much disk space is needed?", "The installer needs 780MB of memory."),
                           ("Which port does it use?", "[Note] It listens on port 8080.")):
        src = number([Source(chunk_ids=["DOC1_000"], doc_id="DOC1", doc_name="guide.pdf", pages="p.3", heading="",
                             text=text)])
        model.invoke(answer_messages(question, src), **limit(model, 1))
        full = list(model.llama._input_ids)
        shared = next((i for i, (a, b) in enumerate(zip(head, full)) if a != b), min(len(head), len(full)))
        # all of the head but its last ~5 tokens, the chat template closing the turn ("<|im_end|>\n<|im_start|>assistant\n")
        assert shared >= n - 6, (shared, n)
        model.llama.reset()
        warm_prefix(model)
    assert warm_prefix(object()) == 0  # backends without a local prompt cache: nothing to do
