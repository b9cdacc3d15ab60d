"""A bounded mapping that forgets the least recently used entry: the one home for per-document caches
(threads, trees, token files, summaries), sized by ``CACHE_DOCUMENTS``."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Iterator, TypeVar

K = TypeVar("K")
V = TypeVar("V")
_MISSING = object()


class LRU(Generic[K, V]):
    """Safe to share between threads (a server's reader and writer threads read the same token caches)."""

    def __init__(self, maxsize: int):
        if not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"LRU maxsize must be a positive integer, not {maxsize!r}")
        self.maxsize = maxsize
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default=None):
        with self._lock:
            value = self._d.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._d.move_to_end(key)
            return value

    def __getitem__(self, key: K) -> V:
        with self._lock:
            value = self._d[key]
            self._d.move_to_end(key)
            return value

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.maxsize:
                self._d.popitem(last=False)

    def __contains__(self, key) -> bool:
        return key in self._d

    def __delitem__(self, key: K) -> None:
        del self._d[key]

    def pop(self, key: K, default=None):
        return self._d.pop(key, default)

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._d))

    def clear(self) -> None:
        self._d.clear()
