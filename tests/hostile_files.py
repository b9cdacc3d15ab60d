"""Hostile inputs the tests (test_bad_input.py) and the probe (bench_results/probes/hostile_probe.py) make: each a
file a loader must refuse or read in one line, quickly and within a memory cap."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

HOSTILE = {  # name -> what its one line says (a part of it), or "" for a file read as far as it goes
    "bomb.docx": "zip bomb",
    "bomb.epub": "zip bomb",
    "cycle.pdf": "corrupt PDF (Detected cyclic page references.)",
    "deep.pdf": "corrupt PDF",
    "selfref.pdf": "",
    "huge.txt": "too large to index as one text (200 MiB",
    "nul.txt": "binary data, not text (NUL bytes found)",
    "binary.html": "not an HTML file (binary content)",
}


def _pdf(objs: list[bytes]) -> bytes:
    out, offsets = b"%PDF-1.4\n", []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + o + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    return out + f"trailer << /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()


def make_hostile(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    content = b"BT /F1 12 Tf 10 100 Td (Hello loop) Tj ET"
    stream = b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>")
    catalog = b"<< /Type /Catalog /Pages 2 0 R >>"
    files = {}
    with zipfile.ZipFile(folder / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as zf:  # 300 MiB of spaces in ~300 KiB
        zf.writestr("word/document.xml", b" " * (300 * 2**20))
    with zipfile.ZipFile(folder / "bomb.epub", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mimetype", "application/epub+zip")
        zf.writestr("OEBPS/chapter.xhtml", b"\0" * (300 * 2**20))
    (folder / "cycle.pdf").write_bytes(_pdf([catalog, b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>", page, stream,
                                             font]))  # the page tree holds itself
    (folder / "deep.pdf").write_bytes(_pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                            page[:-2] + b" /X " + b"[" * 100_000 + b"]" * 100_000 + b" >>", stream,
                                            font]))  # arrays nested 100,000 deep
    (folder / "selfref.pdf").write_bytes(_pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                               page.replace(b"/Contents 4 0 R", b"/Contents [3 0 R 4 0 R]"), stream,
                                               font]))  # a page whose contents name the page itself
    with open(folder / "huge.txt", "wb") as f:  # 200 MiB on one line (sparse: its size is what is refused)
        f.write(b"a")
        f.truncate(200 * 2**20)
        f.seek(200 * 2**20 - 1)
        f.write(b"z")
    (folder / "nul.txt").write_bytes(b"step one\0\0\0" * 10_000)
    (folder / "binary.html").write_bytes(os.urandom(64 * 1024))
    for name in HOSTILE:
        files[name] = folder / name
    return files
