"""The deterministic jump-and-walk: search, read each entry chunk's window, and walk forward while
the window's walk signal says the topic continues. Used as the agent's fallback and as the
``thread_walk`` context strategy in benchmarks."""
from __future__ import annotations

from ..ids import ChunkId


def jump_and_walk(retriever, windows, query: str, k: int = 3, max_walk: int = 2, doc_id: str | None = None,
                  token_budget: int | None = None, hits=None) -> tuple[list, list]:
    """Return (windows, search hits). ``hits`` reuses an earlier search result (else ``retriever`` searches);
    ``windows`` (a WindowBuilder) reads them."""
    if hits is None:
        hits = retriever.search(query, doc_id=doc_id, k=k).hits
    wanted: list[str] = []
    for h in hits[:k]:
        run = [ChunkId.parse(h.chunk_id)]
        while len(run) <= max_walk:
            # a window's walk signal is its last chunk's, so fetch only that chunk
            got = windows.fetch([str(run[-1])], token_budget=10**6).windows
            if not got or not got[0].walk.continues_next or got[0].next_id is None:
                break  # no window: its document is gone (another process deleted it)
            run.append(ChunkId.parse(got[0].next_id))
        wanted.extend(str(c) for c in run if str(c) not in wanted)
    res = windows.fetch(wanted, token_budget=token_budget, query=query) if wanted else None
    return (res.windows if res else []), hits
