"""One-off probe (2026-12-01): does a Chroma server keep the first add of an id, so that add + read-back can
hand each version of a log to exactly one writer? Starts `chroma run` on a free loopback port, runs 4 processes
that each append until they won 25 versions, and counts versions claimed by more than one (BENCHMARKS.md
quotes: 100 versions, none claimed twice). The run quoted used the same worker against a server started by hand."""
import json
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

WORKER = r'''
import chromadb, sys, uuid, json
from chromadb.config import Settings
port = int(sys.argv[2])
c = chromadb.HttpClient(host=f"http://127.0.0.1:{port}", port=port, settings=Settings(anonymized_telemetry=False))
col = c.get_or_create_collection("race", embedding_function=None)
me, won, v = sys.argv[1], [], 1
while len(won) < 25:
    nonce = f"{me}-{uuid.uuid4().hex[:6]}"
    col.add(ids=[f"v{v:09d}"], embeddings=[[0.0, 1.0]], documents=[nonce])
    if col.get(ids=[f"v{v:09d}"])["documents"] == [nonce]:
        won.append(v)
    v += 1
print(json.dumps({"me": me, "won": won}))
'''

if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen(["chroma", "run", "--path", str(tmp / "srv"), "--port", str(port), "--host", "127.0.0.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(8)
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, f"p{i}", str(port)], stdout=subprocess.PIPE, text=True)
                 for i in range(4)]
        owners: dict[int, list[str]] = {}
        for p in procs:
            d = json.loads(p.communicate(timeout=600)[0].strip().splitlines()[-1])
            for v in d["won"]:
                owners.setdefault(v, []).append(d["me"])
        print(json.dumps({"versions": len(owners), "claimed_twice": {v: w for v, w in owners.items() if len(w) > 1}}))
    finally:
        srv.terminate()
