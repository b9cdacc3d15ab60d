"""Tables of figures on a PDF page, read from pdfium's text with its character boxes: each row with its label and
the column headers it sits under, the table's units and title.

A line is cut into cells where the gap between two characters is wider than a word space. A *figure row* has a
label (the cells left of the figure columns; may be empty) and one or more figures ("$ 5,363", "(1,577)", "36.8 %",
"—"). Figures are set right-aligned, so a table's columns are the right edges its figures share. A table is a run
of three or more figure rows (label-only lines between them are its sub-headings); its header is the lines just
above the first row whose cells stand over the columns (a spanning "Year Ended December 31," goes to every column
it covers), its units the "(in millions ...)" said in the header or above it, and its title the nearest line above
that names a statement, else the line above the header.

A page of such tables is read as pdfium's lines, each table's rows written as ``| label | 2018: (1,577) | ... |``
(``table_lines``), its title and units in the table's header row. pdfium reads a page in ~10 ms; only pages with many
figures in their text are read twice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_FIGURE = re.compile(r"^(?:[\$€£]\s*)?\(?\s*[\$€£]?\s*[-−–]?\d[\d,]*(?:\.\d+)?\s*%?\s*\)?\s*%?[*†‡]?$"
                     r"|^[—–-]{1,2}$|^(?:n/?[ma]|nm)$", re.I)
_CURRENCY = re.compile(r"^[\$€£]$")
_UNITS = re.compile(r"\(\s*(?:[\$€£]\s*|(?:amounts|dollars|figures)\s+)*(?:in\s+)?(?:[\$€£]\s*)?"
                    r"(?:millions?|thousands?|billions?)\b[^)\n]{0,60}\)|\bin\s+(?:millions|thousands|billions)\b"
                    r"(?:[^.\n]{0,40}per\s+share[^.\n]{0,10})?", re.I)
_STATEMENT = re.compile(r"\b(?:statements?\s+of|balance\s+she\w*|results\s+of\s+operations|cash\s+flows|"
                        r"financial\s+(?:data|information|highlights)|segment|income|earnings|summary)\b", re.I)
_TITLE_CELL = re.compile(r"^\W*(?:(?:consolidated|condensed|combined)\s+)*(?:statements?\s+of|balance\s+she\w*)\b",
                         re.I)  # a cell that starts with a statement's title
_PERIOD = re.compile(r"\b(?:19|20)\d\d\b|\b(?:year|years|quarter|months|weeks|ended|fiscal|december|june|march|"
                     r"september|change|total)\b", re.I)
_NOT_TITLE = re.compile(r"(?:\.|[\d)%]\s+[-$(]*\d[\d,.()%]*)\s*$")  # a sentence, or a line ending in figures
_YEARISH = re.compile(r"^(?:FY\s?)?(?:19|20)\d\d$|^Q[1-4]$")
_LEADERS = re.compile(r"(?:\s?[.·…]){4,}\s*$")
MIN_ROWS = 3


@dataclass
class Cell:
    text: str
    left: float
    right: float


@dataclass
class Line:
    cells: list[Cell]
    top: float
    height: float
    mono: bool = False  # set in a monospaced font: code (a configuration file's columns), never a table

    @property
    def text(self) -> str:
        return " ".join(c.text for c in self.cells)


@dataclass
class Table:
    first: int               # index of its first line (header or title) in the page's lines
    last: int                # index after its last row
    title: str
    units: str
    columns: list[str]       # each figure column's header ("2018", "Year Ended December 31, 2022")
    subtitle: str = ""       # the lines between the title and the header ("Years ended December 31")
    label_head: str = ""     # the header's words over the labels ("Task", "(Millions)")
    rows: list[tuple[str, list[str]]] = field(default_factory=list)  # (label, figure per column; "" where none)


def figure(text: str) -> bool:
    return bool(_FIGURE.match(text.strip()))


def page_lines(textpage) -> list[Line]:
    """The page's lines in pdfium's order, each cut into cells at gaps wider than a word space."""
    n = textpage.count_chars()
    if n <= 0:
        return []
    text = textpage.get_text_range(0, n)
    if len(text) != n:  # the text does not map onto the characters one to one: no positions to go by
        return []
    lines, chars, first = [], [], None
    for i, ch in enumerate(text + "\n"):
        if ch in "\r\n":
            if chars:
                lines.append(_line(chars))
                lines[-1].mono = first is not None and _monospaced(textpage, first)
            chars, first = [], None
            continue
        if ch.isspace() or i >= n:
            chars.append((" ", None))
            continue
        chars.append((ch, textpage.get_charbox(i)))
        first = i if first is None else first
    return [ln for ln in lines if ln.cells]


MONO_FONT = re.compile(r"mono|courier|consol|menlo|typewriter|\bcmtt|inconsolata|code", re.I)  # a font's name


def _monospaced(textpage, index: int) -> bool:
    """Whether the character at ``index`` is set in a monospaced font (its name says so)."""
    import ctypes

    import pypdfium2.raw as raw

    buf, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    raw.FPDFText_GetFontInfo(textpage.raw, index, buf, 128, ctypes.byref(flags))
    return bool(MONO_FONT.search(buf.value.decode("latin-1", "replace")))


def _line(chars: list) -> Line:
    boxes = [b for _, b in chars if b is not None]
    if not boxes:
        return Line([], 0.0, 0.0)
    heights = sorted(b[3] - b[1] for b in boxes)
    height = max(heights[len(heights) // 2], 1.0)
    gap_min = max(4.0, 0.9 * height)
    cells: list[Cell] = []
    word, left, right, prev_right = "", None, None, None
    space = False
    for ch, box in chars:
        if ch == " ":
            space = bool(word)
            continue
        if space and prev_right is not None and box[0] - prev_right < 0.12 * height:
            space = False  # a space pdfium put between two letters set close
        if space:
            word += " "
            space = False
        if prev_right is not None and box[0] - prev_right > gap_min and word.strip():
            cells.append(Cell(" ".join(word.split()), left, right))
            word, left = "", None
        left = box[0] if left is None else left
        word += ch
        right = prev_right = box[2]
    if word.strip():
        cells.append(Cell(" ".join(word.split()), left, right))
    merged: list[Cell] = []
    for c in cells:  # "$" and "5,363" set apart are one figure; so are "36.8" and "%"
        if merged and _CURRENCY.match(merged[-1].text) and figure(c.text):
            merged[-1] = Cell(merged[-1].text + " " + c.text, merged[-1].left, c.right)
        elif merged and c.text in ("%", ")", "%)") and figure(merged[-1].text + c.text):
            merged[-1] = Cell(merged[-1].text + c.text, merged[-1].left, c.right)
        else:
            merged.append(c)
    return Line(merged, max(b[3] for b in boxes), height)


def _figures_from(line: Line) -> int | None:
    """Index of the first cell of the line's trailing run of figures (None: no figure ends the line)."""
    k = len(line.cells)
    while k > 0 and figure(line.cells[k - 1].text):
        k -= 1
    return k if k < len(line.cells) else None


def _row_start(ln: Line, page_width: float) -> int | None:
    """Where a figure row's figures start (``_figures_from``), or None: no figures, figures in the left third (a
    label such as a year is the row's label), a lone number (a page number), a line of years only (a header), or a
    sentence ending in a number."""
    if ln.mono:
        return None
    k = _figures_from(ln)
    if k == 0 and ln.cells[0].left < 0.3 * page_width:
        k = 1
    if k is None or k >= len(ln.cells):
        return None
    figs = [c.text for c in ln.cells[k:]]
    if min(c.left for c in ln.cells[k:]) <= 0.3 * page_width or (k == 0 and len(figs) < 2):
        return None
    if all(_YEARISH.match(f) for f in figs):
        return None  # a header of years
    if k == 1 and len(ln.cells) == 2 and len(ln.cells[0].text.split()) > 14:
        return None
    if k and _LEADERS.search(" ".join(c.text for c in ln.cells[:k])):
        return None  # a table of contents' entry: its page number after dot leaders
    return k


def _heads(ln: Line, page_width: float) -> bool:
    """Whether a line that is not a figure row has words over the figure columns (right of the label third): a
    column header, so a new table starts below it."""
    return any(c.left > 0.3 * page_width and not figure(c.text) for c in ln.cells)


def _labelled(ln: Line, k: int) -> bool:
    """A figure row with a worded label and a figure with a digit (not only dashes)."""
    return k >= 1 and any(ch.isalpha() for c in ln.cells[:k] for ch in c.text) and \
        any(ch.isdigit() for c in ln.cells[k:] for ch in c.text)


def find_tables(lines: list[Line], page_width: float) -> list[Table]:
    """The page's tables of figures (``Table``), in page order."""
    rows = [(i, k) for i, ln in enumerate(lines) if (k := _row_start(ln, page_width)) is not None]
    tables, run = [], []
    for i, k in rows + [(10 ** 9, 0)]:
        heads = run and any(_heads(lines[j], page_width) for j in range(run[-1][0] + 1, min(i, len(lines))))
        if run and (i - run[-1][0] > 4 or heads):  # three label lines between figure rows, or a new header: it ended
            if sum(_labelled(lines[r], k) for r, k in run) >= MIN_ROWS:
                table = _table(lines, run, page_width, tables[-1].last if tables else 0)
                if table:
                    tables.append(table)
            run = []
        run.append((i, k))
    return tables


def _columns(lines: list[Line], run: list[tuple[int, int]]) -> list[tuple[float, float]]:
    """(left, right) of each figure column: the right edges the rows' figures share, left to right."""
    edges = sorted(c.right for i, k in run for c in lines[i].cells[k:])
    groups: list[list[float]] = []
    for e in edges:
        if groups and e - groups[-1][-1] <= 6.0:
            groups[-1].append(e)
        else:
            groups.append([e])
    keep = [g for g in groups if len(g) >= max(2, len(run) // 4)]
    keep += [g for g in groups if keep and g not in keep and all(abs(g[-1] - k[-1]) > 12.0 for k in keep)]  # sparse
    keep.sort(key=lambda g: g[-1])  # columns ("Change", on a few rows) are columns of their own, not a neighbour's
    spans = []
    for g in keep:
        lo, hi = g[0] - 0.5, g[-1] + 0.5
        lefts = [c.left for i, k in run for c in lines[i].cells[k:] if lo <= c.right <= hi]
        spans.append((min(lefts), max(g)))
    return spans


def _column_of(cell: Cell, columns: list[tuple[float, float]]) -> int:
    """The column a figure stands in: the one whose right edge is nearest to its own (figures are right-aligned)."""
    return min(range(len(columns)), key=lambda j: abs(cell.right - columns[j][1]))


def _table(lines: list[Line], run: list[tuple[int, int]], page_width: float, floor: int = 0) -> Table | None:
    """The table of the figure rows ``run``; nothing of it reaches above ``floor`` (the end of the table above)."""
    columns = _columns(lines, run)
    if not columns:
        return None
    first_row, last_row = run[0][0], run[-1][0]
    label_left = min(lines[i].cells[0].left for i, _ in run)
    head, first_row = _header_lines(lines, first_row, columns, label_left, floor)
    heads = [[] for _ in columns]
    label_head = []
    for i in head:
        for c in lines[i].cells:
            over = [j for j, (lo, hi) in enumerate(columns) if c.left < hi + 4 and c.right > lo - 4]
            if not over and c.left < label_left + 30:
                label_head.append(c.text)
            elif not over:  # between columns: the nearest one
                over = [min(range(len(columns)), key=lambda j: abs((columns[j][0] + columns[j][1]) / 2
                                                                   - (c.left + c.right) / 2))]
            for j in over:
                heads[j].append(c.text)
    top = head[0] if head else first_row
    title, title_at = _title(lines, top, floor)
    around = " ".join([lines[i].text for i in range(max(0, (title_at if title_at is not None else top) - 1),
                                                    first_row)])
    m = _UNITS.search(around)
    units = m.group(0).strip() if m else ""
    below = " ".join(lines[i].text for i in range(title_at + 1, top)) if title_at is not None else ""
    if units and units in below:
        below = " ".join(below.replace(units, " ").split())
    table = Table(first=title_at if title_at is not None else top, last=last_row + 1, title=title, units=units,
                  columns=[" ".join(h) for h in heads], subtitle=below, label_head=" ".join(label_head))
    for i in range(first_row, last_row + 1):
        ln = lines[i]
        k = dict(run).get(i)
        if k is None:
            if ln.text[:1].islower() and table.rows and not table.rows[-1][1]:  # a sub-heading wrapped
                table.rows[-1] = (table.rows[-1][0] + " " + ln.text, [])
            else:
                table.rows.append((ln.text, []))
            continue
        label = " ".join(c.text for c in ln.cells[:k])
        if label[:1].islower() and table.rows and not table.rows[-1][1]:  # a label wrapped onto the figures' line
            label = table.rows.pop()[0] + " " + label
        values = [""] * len(columns)
        for c in ln.cells[k:]:
            j = _column_of(c, columns)
            values[j] = (values[j] + " " + c.text).strip()
        table.rows.append((label, values))
    return table


def _header_lines(lines: list[Line], first_row: int, columns: list[tuple[float, float]],
                  label_left: float, floor: int = 0) -> tuple[list[int], int]:
    """Indexes of the lines above the first row that head its columns (each has a cell standing over a column and
    no figure but years and periods; at most four, none of them prose), and the table's first row: up to two short
    label-only lines right above the first figure row are its sub-headings ("Cash Flows from Operating
    Activities")."""
    head: list[int] = []
    start = first_row
    i = first_row - 1
    while i >= floor and len(head) < 4:
        ln = lines[i]
        over = any(c.left < columns[-1][1] + 4 and c.right > columns[0][0] - 4 for c in ln.cells)
        words = len(ln.text.split())
        if not over and not head and first_row - i <= 2 and words <= 10 and not ln.text.rstrip().endswith("."):
            start = i  # a sub-heading of the table's first rows
            i -= 1
            continue
        k = _figures_from(ln)
        if k is not None and not all(_YEARISH.match(c.text) or _PERIOD.search(c.text) for c in ln.cells[k:]):
            break
        if not over or words > 24 or (len(ln.cells) == 1 and (words > 10 or ln.cells[0].left < label_left + 30)):
            break  # not over the columns, prose, or a title set from the left margin across them
        if (ln.cells[0].left < label_left + 30 and _TITLE_CELL.search(ln.cells[0].text)
                and not any(_YEARISH.match(c.text) or _PERIOD.search(c.text) for c in ln.cells[1:])):
            break  # the title at the margin, the company's name over the columns beside it (not the years)
        head.insert(0, i)
        i -= 1
    if not head:
        start = first_row  # sub-headings without a header: the lines stand as they are
    return head, start


def _title(lines: list[Line], top: int, floor: int = 0) -> tuple[str, int | None]:
    """The table's title and its line: the nearest of the three lines above ``top`` (and below ``floor``, the end
    of the table above) that names a statement, else the line just above, when it is short, not a sentence and
    holds no figure."""
    near = [i for i in range(top - 1, max(floor - 1, top - 4), -1) if _figures_from(lines[i]) is None]
    for i in near:
        t = lines[i].text
        if _STATEMENT.search(t) and len(t.split()) <= 14 and not _NOT_TITLE.search(t):
            return t, i
    if near and near[0] == top - 1:
        t = lines[near[0]].text
        if 1 <= len(t.split()) <= 12 and not _NOT_TITLE.search(t):
            return t, near[0]
    return "", None


def _distinct(columns: list[str]) -> list[str]:
    """The column headers less the words every one of them starts with ("Year Ended December 31, 2023" and "... 2022"
    are "2023" and "2022" in a row; the header row keeps them whole)."""
    words = [c.split() for c in columns]
    if len(words) < 2 or not all(words):
        return columns
    n = 0
    while all(len(w) > n + 1 and w[n] == words[0][n] for w in words):
        n += 1
    return [" ".join(w[n:]) for w in words]


def table_lines(table: Table) -> list[str]:
    """A table as text lines: its header row (title, units, column headers) and a rule under it, then each row as ``| label | header:
    figure | ... |`` (the headers less the words they all start with); a label-only line (a sub-heading inside the
    table) as ``| label |``."""
    head = ", ".join(x for x in (table.title, table.subtitle, table.units) if x) or table.label_head or "Table"
    out = ["| " + " | ".join([head] + [c or "-" for c in table.columns]) + " |",
           "|" + " --- |" * (len(table.columns) + 1)]
    short = _distinct(table.columns)
    for label, values in table.rows:
        if not values:
            out.append(f"| {label} |")
            continue
        cells = [f"{h}: {v}" if h else v for h, v in zip(short, values) if v]
        out.append("| " + " | ".join([label] + cells) + " |")
    return out


_NUMBERISH = re.compile(r"(?<![\w.])\(?\$?\d[\d,]*(?:\.\d+)?\)?%?(?![\w.])")
MIN_FIGURES = 12  # a page whose text holds fewer numbers has no table of figures worth reading twice


def read_tables(path, password: str | None, page_texts: list[list[str]], skip: set[int]) -> dict[int, tuple]:
    """Page index -> (lines, titles) for each page of the PDF at ``path`` that holds a table of figures: the page's
    lines as pdfium reads them, each table's lines replaced by ``table_lines``, and {line index: title} of the tables'
    titles. Pages in ``skip`` and pages with fewer than ``MIN_FIGURES`` numbers in ``page_texts`` are not read;
    a PDF pdfium cannot open gives nothing (its lines stand as they are)."""
    want = [pg for pg, lines in enumerate(page_texts)
            if pg not in skip and len(_NUMBERISH.findall("\n".join(lines))) >= MIN_FIGURES]
    if not want:
        return {}
    import pypdfium2 as pdfium

    from ..pdfium_lock import PDFIUM

    out: dict[int, tuple] = {}
    try:
        with PDFIUM:
            pdf = pdfium.PdfDocument(str(path), password=password)
    except Exception:  # noqa: BLE001 - pdfium cannot read it: pypdf's lines stand
        return {}
    try:
        for pg in want:
            try:
                with PDFIUM:  # a page at a time: a page image asked for meanwhile waits one page, not the file
                    page = pdf[pg]
                    textpage = page.get_textpage()
                    try:
                        lines, width = page_lines(textpage), page.get_size()[0]
                    finally:
                        textpage.close()
                        page.close()
                tables = find_tables(lines, width)
            except Exception:  # noqa: BLE001 - this page's lines stand
                continue
            if tables:
                out[pg] = _with_tables(lines, tables)
    finally:
        with PDFIUM:
            pdf.close()
    return out


def _with_tables(lines: list[Line], tables: list[Table]) -> tuple[list[str], dict[int, str]]:
    out, titles, at = [], {}, 0
    for t in tables:
        out += [ln.text for ln in lines[at:t.first]]
        if t.title:
            titles[len(out)] = t.title
        out += table_lines(t)
        at = t.last
    out += [ln.text for ln in lines[at:]]
    return out, titles
