"""A PDF written by hand for the tests: text set at given positions in Helvetica, figures right-aligned by the
font's own widths, as a filing's statement sets them (no PDF library writes it: the bytes are all here)."""
from __future__ import annotations

from pathlib import Path

# Helvetica's advance widths (1/1000 em) of the characters figures are set in
_WIDTHS = {**{d: 556 for d in "0123456789"}, ",": 278, ".": 278, "(": 333, ")": 333, "$": 556, " ": 278,
           "%": 889, "-": 333}


def width(text: str, size: float) -> float:
    return sum(_WIDTHS.get(ch, 556) for ch in text) * size / 1000


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path: Path, pages: list[list[tuple[float, float, str, float]]]) -> Path:
    """Each page a list of (x, y, text, size[, "Courier"]); a negative x sets the text right-aligned at -x (by
    Helvetica's widths)."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>"]
    kids = []
    for items in pages:
        ops = ["BT"]
        for x, y, text, size, *font in items:
            left = -x - width(text, size) if x < 0 else x
            ops.append(f"/{'F2' if font == ['Courier'] else 'F1'} {size} Tf 1 0 0 1 {left:.2f} {y:.2f} Tm "
                       f"({_escape(text)}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objs.append(f"<< /Length {len(stream)} >>\nstream\n".encode("latin-1") + stream + b"\nendstream")
        content = len(objs)
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                    "/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> >>")
        kids.append(len(objs))
    objs[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        body = obj if isinstance(obj, bytes) else obj.encode("latin-1")
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


def statement_pdf(path: Path) -> Path:
    """A made-up company's two pages: a page of prose, then a statement of operations whose header spans two year
    columns ("Year Ended December 31," over "2023" and "2022"), its units in the header, a sub-heading inside the
    table, a label wrapped onto the figures' line, and a paragraph after it."""
    prose = [(72, 720, "Widget Corp annual report", 16),
             (72, 690, "Widget Corp makes widgets. This report covers the year ended December 31, 2023.", 10),
             (72, 676, "Revenue grew because more widgets were sold in every region than a year before.", 10)]
    rows = [("Service revenue", "1,204", "1,118"), ("Product revenue", "$ 3,410", "$ 3,002"),
            ("Total revenue", "4,614", "4,120"), ("Cost of revenue", "(1,877)", "(1,650)"),
            ("Operating expenses", None, None), ("Research and development", "512", "498"),
            ("Sales and marketing", "301", "287"), ("Operating income", "$ 1,924", "$ 1,685")]
    items = [(72, 740, "Widget Corp", 10), (72, 724, "Consolidated Statements of Operations", 11),
             (400, 700, "Year Ended December 31,", 9),
             (72, 686, "(In millions, except per share data)", 9), (-430, 686, "2023", 9), (-520, 686, "2022", 9)]
    y = 668
    for label, a, b in rows:
        items.append((72, y, label, 9))
        if a is not None:
            items += [(-430, y, a, 9), (-520, y, b, 9)]
        y -= 16
    items.append((72, y - 20, "The accompanying notes are an integral part of these statements.", 9))
    return write_pdf(path, [prose, items])
