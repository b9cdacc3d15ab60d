"""The one lock around pdfium: the library is not thread-safe, and the HTTP server renders pages (``page_view``)
while it indexes an upload (``ingest.pdf_tables``, ``ingest.ocr``) in other threads. Every use of pypdfium2 holds
it, a page at a time."""
from __future__ import annotations

import threading

PDFIUM = threading.Lock()
