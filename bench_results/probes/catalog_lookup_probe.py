"""One-off probe (issue 16): what the catalog's find_by_path + find_by_hash (a miss) cost on a grown library.

    python bench_results/probes/catalog_lookup_probe.py [HOME]   # default bench_out/scale-100000

Opens the library's catalog (read only) and times 200 pairs of lookups for a path and a hash it does not hold.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from thread_rag.store.catalog import Catalog


def main(home: str = "bench_out/scale-100000") -> None:
    catalog = Catalog(Path(home) / "catalog.json")
    n = len(catalog.documents())
    t = time.perf_counter()
    for _ in range(200):
        catalog.find_by_path("probe://none")
        catalog.find_by_hash("none")
    print(f"{n} documents: find_by_path + find_by_hash (a miss) {(time.perf_counter() - t) / 200 * 1000:.2f} ms")


if __name__ == "__main__":
    main(*sys.argv[1:2])
