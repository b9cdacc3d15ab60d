"""Zip containers (DOCX, EPUB): their entries' sizes checked before anything is unpacked."""
from __future__ import annotations

import zipfile
from pathlib import Path

from ..errors import IngestError

ZIP_ENTRY_MAX = 256 * 2**20  # bytes one entry of a DOCX or EPUB may unpack to
ZIP_TOTAL_MAX = 1024 * 2**20  # and all of them together
ZIP_RATIO_MAX = 200  # an entry over 1 MiB that unpacks to 200 times its packed size is a zip bomb


def zip_guard(p: Path, zf: zipfile.ZipFile) -> None:
    """Refuse a zip whose entries would unpack past the limits above, read from its directory before anything is
    unpacked (a zip bomb is one line, not a machine out of memory)."""
    total = 0
    for info in zf.infolist():
        total += info.file_size
        bomb = info.file_size > 2**20 and info.file_size > ZIP_RATIO_MAX * max(info.compress_size, 1)
        if info.file_size > ZIP_ENTRY_MAX or bomb or total > ZIP_TOTAL_MAX:
            raise IngestError(p, f"refused: {info.filename} would unpack to {info.file_size / 2**20:.0f} MiB from "
                              f"{info.compress_size / 2**20:.1f} MiB (a zip bomb, or a file too large to read)")
