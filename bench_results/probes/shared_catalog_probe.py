"""One-off probe: catalog requests per search and search latency, local vs shared library (chroma run on loopback)."""
import sys
from pathlib import Path
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"
import statistics, subprocess, sys, time, tempfile, socket, json, os
from pathlib import Path
from thread_rag.settings import load_settings
from thread_rag.engine import Engine
from thread_rag.store.server_catalog import ServerCatalog

tmp = Path(tempfile.mkdtemp())
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
srv = subprocess.Popen(["chroma", "run", "--path", str(tmp / "srv"), "--port", str(port), "--host", "127.0.0.1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
time.sleep(6)
docs = sorted((REPO / "docs").glob("*.md"))
calls = {"n": 0}
real = ServerCatalog.reload
def counted(self):
    calls["n"] += 1
    return real(self)
ServerCatalog.reload = counted
out = {}
try:
    for mode in ("local", "shared"):
        over = {"HOME": str(tmp / mode), "RERANKER": "none"}
        if mode == "shared":
            over["CHROMA_HOST"] = f"127.0.0.1:{port}"
        e = Engine(load_settings(over, env={}, config_file=False))
        t = time.perf_counter(); e.index_paths(docs); idx = time.perf_counter() - t
        qs = ["how do I index a folder", "what is a walk", "configure the data dir", "summaries cache", "repair the store"] * 4
        e.retriever.search(qs[0], k=5)
        calls["n"] = 0
        ts = []
        for q in qs:
            t = time.perf_counter(); e.retriever.search(q, k=5); ts.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        for _ in range(50):
            e.library.refresh()
        refresh_ms = (time.perf_counter() - t) / 50 * 1000
        out[mode] = {"index_s": round(idx, 2), "search_p50_ms": round(statistics.median(ts), 1),
                     "catalog_reads_per_search": calls["n"] / len(qs), "refresh_ms": round(refresh_ms, 2)}
        e.close()
finally:
    srv.terminate()
print(json.dumps(out))
