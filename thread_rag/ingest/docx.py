"""DOCX loader (python-docx): paragraphs, headings and tables in body order.

Headings (the Title and Heading N styles) give heading paths; list and heading numbers are written as Word shows
them; a table is one block of ``| cell | cell |`` rows, and so is a chart's data (under its title); text boxes are
read once and content controls are read; equations (OMML) are read as LaTeX (``omml.py``).
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

from ..errors import IngestError
from ..records import Block, LoadedDocument
from .zips import zip_guard
from . import omml


def load_docx(p: Path) -> LoadedDocument:
    if not zipfile.is_zipfile(p):
        raise IngestError(p, "not a DOCX (not a zip container; corrupt or misnamed file)")
    with zipfile.ZipFile(p) as zf:
        zip_guard(p, zf)
    try:
        import docx
        from docx.oxml.ns import qn
    except ImportError as exc:  # pragma: no cover
        raise IngestError(p, f"python-docx is not installed ({exc})") from None
    try:
        document = docx.Document(str(p))
    except KeyError as exc:
        if "officeDocument" in str(exc) or "strict" in str(exc).lower():
            raise IngestError(p, "DOCX cannot be opened (Strict OOXML is not supported by python-docx; "
                              "re-save it as a standard .docx)") from None
        raise IngestError(p, f"DOCX cannot be opened ({str(exc)[:120]})") from None
    except ValueError as exc:
        msg = str(exc)
        if "officeDocument" in msg:
            raise IngestError(p, "DOCX cannot be opened (Strict OOXML or not a Word document; "
                              "re-save it as a standard .docx)") from None
        raise IngestError(p, f"DOCX cannot be opened ({msg[:120]})") from None
    except zipfile.BadZipFile as exc:
        raise IngestError(p, f"corrupt DOCX ({exc})") from None
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    numbers = _Numbering(document, qn)
    for child in _body_items(document.element.body, qn):
        if child.tag == qn("w:p"):
            para = Paragraph(child, document)
            text = _para_text(child, qn)
            charts = [lines for lines in (_chart(document, el) for el in child.iter(_CHART)) if lines]
            for title, table in charts:
                blocks += [Block(text=t, heading_path=tuple(h for _, h in path)) for t in (title, table)]
            if not text.strip():
                continue
            style = (para.style.name if para.style is not None else "") or ""
            level = _heading_level(style)
            marker, depth = numbers.marker(child, para.style)
            if level is not None:
                title = (marker.strip() + " " if marker and marker.strip() != "-" else "") + text.strip()
                path = [h for h in path if h[0] < level] + [(level, title)]
                blocks.append(Block(text=title, heading_path=tuple(t for _, t in path), is_heading=True))
            else:
                if not marker and "List" in style:
                    marker = "- "
                blocks.append(Block(text="  " * depth + marker + text.strip(), heading_path=tuple(t for _, t in path)))
        else:
            marker = lambda el: numbers.marker(el, Paragraph(el, document).style)[0]  # noqa: E731
            text = _table_text(Table(child, document), qn, marker)
            if text:
                blocks.append(Block(text=text, heading_path=tuple(t for _, t in path)))
    return LoadedDocument(path=str(p), kind="docx", blocks=blocks)


_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_CHART = _C + "chart"
_RID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_A_T = "{http://schemas.openxmlformats.org/drawingml/2006/main}t"


def _chart(document, el) -> tuple[str, str] | None:
    """A chart drawn in the text as (its title, else its kind: "Line chart"; the table of its data), from the values
    the chart part keeps beside its drawing (each series' cached category labels, or x values, and numbers): a row a
    category, a column a series, the series' names as the header. None where the part is missing, malformed or
    holds no series."""
    from lxml import etree

    try:
        root = etree.fromstring(document.part.related_parts[el.get(_RID)].blob)
        cols, cats = _series(root)
    except (KeyError, ValueError, etree.XMLSyntaxError):  # a missing or malformed chart part: the text reads on
        return None
    if not cols:
        return None
    rows = [["", *(n for n, _ in cols)]] + [[cats.get(i, str(i + 1)), *(v.get(i, "") for _, v in cols)]
                                           for i in sorted(set(cats) | {i for _, v in cols for i in v})]
    plot = next((c.tag[len(_C):] for c in root.iterfind(f".//{_C}plotArea/*") if c.tag.endswith("Chart")), "chart")
    title = root.find(f"{_C}chart/{_C}title")  # the chart's own, not an axis's
    named = " ".join("".join(t.text or "" for t in title.iter(_A_T, _C + "v")).split()) if title is not None else ""
    kind = re.sub(r"(3D)?Chart$", "", plot)
    return (named or f"{kind[:1].upper()}{kind[1:]} chart",
            "\n".join("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows))


def _series(root) -> tuple[list, dict]:
    """A chart's series as [(name, {point index: value})] and its category labels {point index: label}; a scatter or
    bubble chart's x values stand for categories, its y values for values."""
    cats, cols = {}, []
    for ser in root.iterfind(f".//{_C}ser"):
        name = " ".join((ser.findtext(f"{_C}tx//{_C}v") or "").split())  # its cached name, not the sheet reference
        labels = ser.find(f"{_C}cat")
        source = labels if labels is not None else ser.find(f"{_C}xVal")
        for pt in source.iterfind(f".//{_C}pt") if source is not None else ():
            v = pt.findtext(f"{_C}v") or ""
            cats.setdefault(int(pt.get("idx", 0)), v.strip() if labels is not None else _number(v))
        values = ser.find(f"{_C}val") if ser.find(f"{_C}val") is not None else ser.find(f"{_C}yVal")
        cols.append((name, {int(pt.get("idx", 0)): _number(pt.findtext(f"{_C}v") or "")
                            for pt in (values.iterfind(f".//{_C}pt") if values is not None else [])}))
    return cols, cats


def _number(v: str) -> str:
    """A cached chart value as the sheet shows it: 4.4000000000000004 -> 4.4, 2.0 -> 2."""
    try:
        s = repr(float(v))
    except ValueError:
        return v.strip()
    return s[:-2] if s.endswith(".0") else s


def _para_text(p_el, qn) -> str:
    """A paragraph's text (its equations as LaTeX: ``omml``); a text box's paragraphs each end a line, and an
    ``mc:Fallback`` (the same text box again, for older readers) is skipped: read, each box came twice, run together."""
    parts: list[str] = []
    equations: list[str] = []  # the paragraph's equations, in order
    t, tab, breaks, para = qn("w:t"), qn("w:tab"), (qn("w:br"), qn("w:cr")), qn("w:p")

    def walk(el) -> None:
        for node in el:
            if node.tag == _MC_FALLBACK:  # read only where its mc:Choice gave no text
                if not any(x.tag == t and x.text for c in el if c.tag != _MC_FALLBACK for x in c.iter()):
                    walk(node)
                continue
            if node.tag == t:
                parts.append(node.text or "")
            elif node.tag == omml.OMATH:
                equations.append(omml.latex(node))
                parts.append(f"{' ' if parts and parts[-1].endswith('$') else ''}${equations[-1]}$")
            elif node.tag == omml.OMATH_PARA:  # equations on lines of their own
                shown = [omml.latex(m) for m in node.iter(omml.OMATH)]
                equations.extend(shown)
                parts.append(("\n" if parts and not parts[-1].endswith("\n") else "")
                             + "\n".join(f"$${x}$$" for x in shown) + "\n")
            elif node.tag == tab:
                parts.append("\t")
            elif node.tag in breaks:
                parts.append("\n")
            else:
                walk(node)
                if node.tag == para and parts and not parts[-1].endswith("\n"):
                    parts.append("\n")  # a paragraph inside a text box

    walk(p_el)
    if equations and not any(x.text and x.text.strip() for x in p_el.iter(t)):  # equations alone: each its line
        return "\n".join("$$" + x + "$$" for x in equations)
    return "".join(parts)


def _heading_level(style: str) -> int | None:
    if style == "Title":
        return 0
    m = re.match(r"^Heading\s*(\d)", style)
    return int(m.group(1)) if m else None


class _Numbering:
    """Word's list and heading numbers, which the file does not hold as text: each numbered paragraph (its own
    ``w:numPr`` or its style's, up the ``basedOn`` chain) counts at its level of the list definition it uses, deeper
    levels restarting, and shows the level's ``lvlText`` ("%1.%2.") with each level's number in its format (decimal,
    letters, roman); bullets are "- ". A file without a numbering part, or a definition it lacks, numbers nothing."""

    _ROMAN = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
              (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]

    def __init__(self, document, qn) -> None:
        self.qn, self.nums, self.levels, self.counts, self.started = qn, {}, {}, {}, set()
        try:
            root = document.part.numbering_part.element
        except Exception:  # noqa: BLE001 - no numbering part (python-docx raises NotImplementedError or KeyError)
            return
        val = qn("w:val")
        for a in root.iterchildren(qn("w:abstractNum")):
            lv = {}
            for lvl in a.iterchildren(qn("w:lvl")):
                get = {t: lvl.find(qn(f"w:{t}")) for t in ("start", "numFmt", "lvlText")}
                lv[int(lvl.get(qn("w:ilvl"), "0"))] = (
                    _int_attr(get["start"], val, 1), get["numFmt"].get(val) if get["numFmt"] is not None else "decimal",
                    get["lvlText"].get(val, "") if get["lvlText"] is not None else "")
            self.levels[a.get(qn("w:abstractNumId"))] = lv
        for n in root.iterchildren(qn("w:num")):
            ref = n.find(qn("w:abstractNumId"))
            starts = {int(o.get(qn("w:ilvl"), "0")): _int_attr(o.find(qn("w:startOverride")), val, None)
                      for o in n.iterchildren(qn("w:lvlOverride"))}
            if ref is not None:
                self.nums[n.get(qn("w:numId"))] = (ref.get(val), {k: v for k, v in starts.items() if v is not None})

    def _num_pr(self, p_el, style):
        qn = self.qn
        pr = p_el.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
        seen = 0
        while pr is None and style is not None and seen < 20:  # the style's numbering, or its base style's
            pr = style.element.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
            style, seen = style.base_style, seen + 1
        if pr is None:
            return None
        num, ilvl = pr.find(qn("w:numId")), pr.find(qn("w:ilvl"))
        return (None if num is None else num.get(qn("w:val"))), _int_attr(ilvl, qn("w:val"), 0)

    def marker(self, p_el, style) -> tuple[str, int]:
        """(the paragraph's number or bullet with a space after it, its list level), or ("", 0)."""
        try:
            found = self._num_pr(p_el, style)
        except Exception:  # noqa: BLE001 - a malformed style chain numbers nothing
            return "", 0
        if not found or found[0] in (None, "0") or found[0] not in self.nums:
            return "", 0
        num_id, ilvl = found
        abstract, overrides = self.nums[num_id]
        levels = self.levels.get(abstract, {})
        if ilvl not in levels:
            return "", 0
        counts = self.counts.setdefault(abstract, {})
        if num_id not in self.started:  # a list that restarts its numbering (startOverride) starts again
            self.started.add(num_id)
            for k, v in overrides.items():
                counts[k] = v - 1
        start, fmt, text = levels[ilvl]
        counts[ilvl] = counts.get(ilvl, start - 1) + 1
        for deeper in [k for k in counts if k > ilvl]:
            del counts[deeper]
        for k in range(ilvl):  # a level shown before it had an item of its own counts as used, as Word counts it
            counts.setdefault(k, levels.get(k, (1, "decimal", ""))[0])
        if fmt == "bullet":
            return "- ", ilvl
        if fmt == "none" or not text:
            return "", ilvl

        def number(m) -> str:
            k = int(m.group(1)) - 1
            s, f, _ = levels.get(k, (1, "decimal", ""))
            return self._format(counts.get(k, s), f)

        return re.sub(r"%([1-9])", number, text).strip() + " ", ilvl

    @classmethod
    def _format(cls, n: int, fmt: str) -> str:
        if fmt in ("lowerLetter", "upperLetter") and n > 0:
            s = ""
            while n:
                n, r = divmod(n - 1, 26)
                s = chr(97 + r) + s
            return s.upper() if fmt == "upperLetter" else s
        if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
            s = ""
            for v, r in cls._ROMAN:
                while n >= v:
                    s, n = s + r, n - v
            return s.upper() if fmt == "upperRoman" else s
        return str(n)


def _int_attr(el, attr: str, default):
    try:
        return int(el.get(attr)) if el is not None else default
    except (TypeError, ValueError):
        return default


_CONTAINERS = ("w:sdt", "w:sdtContent", "w:customXml", "w:smartTag")  # content controls and tags hold content


def _body_items(parent, qn):
    """The paragraphs and tables of a body or a table cell in reading order, those inside content controls
    (``w:sdt``) and custom XML included (they were left out: a form's tables, a template's text)."""
    containers = {qn(t) for t in _CONTAINERS}
    for child in parent.iterchildren():
        if child.tag in (qn("w:p"), qn("w:tbl")):
            yield child
        elif child.tag in containers:
            yield from _body_items(child, qn)


def _table_text(table, qn, marker=lambda el: "") -> str:
    """A table as ``| cell | cell |`` lines, its first row (the header) first, one line a row; a cell spanning
    columns or rows repeats its text in each (each cell stays under its column's header); columns a row skips at its
    start (``w:gridBefore``) are empty cells. A cell's paragraphs, and a table nested in it, are one line of text. A
    table of one cell is a framed note or a layout box: its paragraphs come as plain lines (a table in it as a
    table)."""
    try:
        grid = [(row.grid_cols_before, row.cells) for row in table.rows]
    except Exception:  # noqa: BLE001 - a malformed row property: read the cells alone
        grid = [(0, row.cells) for row in table.rows]
    if sum(before + len(cells) for before, cells in grid) == 1:  # a box: its paragraphs as lines, a table in it as one
        from docx.table import Table

        items = _body_items(grid[0][1][0]._tc, qn)
        return "\n".join(_table_text(Table(item, table), qn, marker) if item.tag == qn("w:tbl")
                         else _marked(item, qn, marker) for item in items).strip()
    rows, read = [], {}  # read: a spanning cell is one cell, read (and its list numbers counted) once
    for before, cells in grid:
        for cell in cells:
            if cell._tc not in read:
                read[cell._tc] = _cell_text(cell._tc, qn, marker)
        rows.append([""] * before + [read[cell._tc] for cell in cells])
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows if any(r)]
    return "\n".join(lines)


def _marked(p_el, qn, marker) -> str:
    """A paragraph's text after its list number or bullet (none when it has no text)."""
    text = _para_text(p_el, qn)
    return marker(p_el) + text if text.strip() else text


def _cell_text(tc, qn, marker=lambda el: "") -> str:
    """A cell's paragraphs (each after its list number or bullet, ``marker``), and the cells of a table nested in
    it, as one line of text."""
    parts = []
    for item in _body_items(tc, qn):
        if item.tag == qn("w:p"):
            parts.append(_marked(item, qn, marker))
        else:
            parts += [_cell_text(c, qn, marker) for tr in item.iterchildren(qn("w:tr"))
                      for c in tr.iterchildren(qn("w:tc"))]
    return " ".join(" ".join(parts).split())
