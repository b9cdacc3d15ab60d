"""HTML loader: one page (.html, .htm) as blocks in reading order, read with the standard library's ``html.parser``.

The page becomes the blocks the Markdown reader makes of the same text: headings h1-h6 give heading paths (the
page's ``<title>`` is the top one where no h1 is there and no heading repeats it); a paragraph (``p``, a ``div``'s
text, ``dt``, ``dd``, ``blockquote``) is a block, ``<br>`` a line break in it; a list is one block, an item a line
("- " or "1. ", a nested item or an item's next paragraph indented under it); ``pre`` keeps its lines and indentation;
a table's rows are ``| cell | cell |`` lines, its header row first (a table with one filled cell a row is a framed
note or a layout: its cells are read as text). What is not content is left out: scripts, styles, forms, ``nav``,
page headers and footers, asides, ``role="navigation"`` and class names naming navigation (DocBook's
navheader/navfooter, breadcrumbs, tables of contents, permalinks beside headings). Broken markup does not fail:
unclosed tags close where a browser would close them, and whatever text there is is read.
"""
from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser
from pathlib import Path

from ..errors import IngestError
from ..records import Block, LoadedDocument
from .text import decode_text, looks_like_text

BINARY = "not an HTML file (binary content)"

_VOID = frozenset("area base basefont bgsound br col embed frame hr img input keygen link meta param source track "
                  "wbr".split())
_SKIP = frozenset("script style noscript template svg math nav footer aside form head title iframe object embed "
                  "canvas video audio select button dialog".split())
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_NAV_CLASS = re.compile(r"navheader|navfooter|breadcrumb", re.I)
_NAV_CLASS_TOKENS = frozenset({"toc", "list-of-tables", "list-of-figures", "list-of-examples", "headerlink"})
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCK = frozenset("address article aside blockquote body center dd details dir div dl dt fieldset figcaption figure "
                   "footer header hgroup html legend li main menu nav ol p pre section summary table tbody td tfoot "
                   "th thead tr ul caption hr h1 h2 h3 h4 h5 h6 noframes".split())
_CLOSES_P = frozenset("address article aside blockquote center details dir div dl fieldset figcaption figure footer "
                      "header hgroup hr main menu nav ol p pre section summary table ul h1 h2 h3 h4 h5 h6 "
                      "dd dt li".split())
_SCOPE = frozenset("table td th caption html template button object".split())  # an implied close stops here
_HEAD_TAGS = frozenset("title meta link style script base noscript template".split())
_SECTIONING = frozenset({"article", "main", "section"})
_MAX_DEPTH = 150  # deeper elements (unclosed tags by the thousand) are read flat: their text stays, recursion stops
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_BR = object()  # a line break in the inline text being gathered


class _Node:
    __slots__ = ("tag", "attrs", "children", "parent")

    def __init__(self, tag: str, attrs: dict, parent: "_Node | None" = None):
        self.tag, self.attrs, self.children, self.parent = tag, attrs, [], parent


class _TreeBuilder(HTMLParser):
    """A lenient element tree: end tags close the nearest open element of their name (a stray one is ignored);
    a block start closes an open ``p``, an item an open item, a row or cell an open row or cell, a body element
    the ``head``, as browsers do."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root", {})
        self.stack = [self.root]
        self.title: str | None = None

    def _close(self, names, stop=_SCOPE) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            tag = self.stack[i].tag
            if tag in names:
                del self.stack[i:]
                return
            if tag in stop:
                return

    def _leave_head(self, tag: str | None) -> None:
        if tag not in _HEAD_TAGS and any(n.tag == "head" for n in self.stack):
            self._close({"head"}, stop=())

    def _open(self, tag: str, attrs, void: bool) -> None:
        self._leave_head(tag)
        if tag in _CLOSES_P:
            self._close({"p"})
        if tag == "li":
            self._close({"li"}, stop=_SCOPE | {"ul", "ol"})
        elif tag in ("dt", "dd"):
            self._close({"dt", "dd"}, stop=_SCOPE | {"dl"})
        elif tag == "tr":
            self._close({"tr"}, stop={"table"})
        elif tag in ("td", "th"):
            self._close({"td", "th"}, stop={"tr", "table"})
        elif tag in ("thead", "tbody", "tfoot"):
            self._close({"thead", "tbody", "tfoot"}, stop={"table"})
        elif tag in _HEADINGS and self.stack[-1].tag in _HEADINGS:
            del self.stack[-1]
        node = _Node(tag, {k.lower(): (v or "") for k, v in reversed(attrs)}, self.stack[-1])  # first one wins
        self.stack[-1].children.append(node)
        if not void and tag not in _VOID and len(self.stack) < _MAX_DEPTH:
            self.stack.append(node)

    def handle_starttag(self, tag, attrs) -> None:
        self._open(tag, attrs, void=False)

    def handle_startendtag(self, tag, attrs) -> None:
        self._open(tag, attrs, void=True)

    def handle_endtag(self, tag) -> None:
        if tag == "br":  # "</br>" is a line break to a browser
            self._open("br", [], void=True)
        elif tag == "p" and not any(n.tag == "p" for n in self.stack):
            return
        else:
            self._close({tag}, stop=())

    def handle_data(self, data) -> None:
        top = self.stack[-1]
        if top.tag == "title" and self.title is None:
            self.title = data
        elif top.tag == "title":
            self.title += data
        if top.tag == "head" and data.strip():
            self._leave_head(None)
        self.stack[-1].children.append(data)


def _classes(node: _Node) -> str:
    return node.attrs.get("class", "")


def _skipped(node: _Node) -> bool:
    if node.tag in _SKIP or "hidden" in node.attrs or node.attrs.get("aria-hidden", "").lower() == "true":
        return True
    if node.attrs.get("role", "").strip().lower() in _SKIP_ROLES:
        return True
    cls = _classes(node)
    return bool(cls) and (bool(_NAV_CLASS.search(cls)) or any(t in _NAV_CLASS_TOKENS for t in cls.lower().split()))


def _inside(node: _Node, tags) -> bool:
    n = node.parent
    while n is not None:
        if n.tag in tags:
            return True
        n = n.parent
    return False


def _lines(segments: list) -> list[str]:
    """Inline text as lines: whitespace runs collapsed to one space, ``<br>`` breaking a line."""
    out, cur = [], []
    for s in segments + [_BR]:
        if s is _BR:
            out.append(" ".join("".join(cur).split()))
            cur = []
        else:
            cur.append(s)
    return out


def _raw_text(node: _Node, out: list) -> None:
    """A ``pre``'s text as written (``<br>`` a line break)."""
    for c in node.children:
        if isinstance(c, str):
            out.append(c)
        elif c.tag == "br":
            out.append("\n")
        elif not _skipped(c):
            _raw_text(c, out)


def _preformatted(node: _Node) -> str:
    parts: list[str] = []
    _raw_text(node, parts)
    text = "".join(parts).replace("\xa0", " ")
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(ln.rstrip() for ln in lines).rstrip()


def _int(value: str, default: int, lo: int = 1, hi: int = 1000) -> int:
    try:
        return min(hi, max(lo, int(value.strip())))
    except (ValueError, AttributeError):
        return default


class _Reader:
    """Walks the tree, gathering items in reading order: ``(level, title)`` for a heading, ``(None, text)`` for a
    block. ``structured`` is set where a heading or a table was read (a table cell holding one is layout)."""

    def __init__(self) -> None:
        self.items: list[tuple[int | None, str]] = []
        self.inline: list = []
        self.structured = False

    def flush(self) -> None:
        if not self.inline:
            return
        para: list[str] = []
        for ln in _lines(self.inline) + [""]:  # an empty line (<br><br>) parts two blocks
            if ln:
                para.append(ln)
            elif para:
                self.items.append((None, "\n".join(para)))
                para = []
        self.inline = []

    def block(self, text: str) -> None:
        self.flush()
        if text.strip():
            self.items.append((None, text))

    def read(self, node: _Node) -> "_Reader":
        self.walk(node)
        self.flush()
        return self

    def walk(self, node: _Node) -> None:
        for child in node.children:
            if isinstance(child, str):
                self.inline.append(child)
                continue
            tag = child.tag
            if tag == "header":
                if _inside(child, _SECTIONING) and not _skipped(child):
                    self.headings_only(child)  # an article's header: its title, not its byline
                continue
            if _skipped(child):
                continue
            if tag == "br":
                self.inline.append(_BR)
            elif tag in _HEADINGS:
                self.flush()
                title = " ".join(" ".join(_lines(_Reader().inline_of(child))).split())
                if title:
                    self.items.append((_HEADINGS[tag], title))
                    self.structured = True
            elif tag == "pre" or (tag == "code" and self.lone_code(node, child)):
                self.block(_preformatted(child))
            elif tag in ("ul", "ol", "menu", "dir"):
                self.block("\n".join(_list_lines(child)))
            elif tag == "table":
                self.flush()
                self.table(child)
            elif tag in _BLOCK:
                self.flush()
                self.walk(child)
                self.flush()
            else:
                self.walk(child)  # inline: a, em, strong, code, span, b, i, ...

    def inline_of(self, node: _Node) -> list:
        self.walk(node)
        out, self.inline = self.inline, []
        for _, text in self.items:  # a block inside (a heading holding a div): its text, on the line
            out += [" ", text]
        return out

    def headings_only(self, node: _Node) -> None:
        for c in node.children:
            if isinstance(c, _Node) and not _skipped(c):
                if c.tag in _HEADINGS:
                    self.walk_one(c)
                else:
                    self.headings_only(c)

    def walk_one(self, node: _Node) -> None:
        self.walk(_wrap(node))

    def lone_code(self, parent: _Node, code: _Node) -> bool:
        """A ``code`` element holding lines, alone in a block element: a code block written without ``pre``."""
        if parent.tag not in _BLOCK or self.inline and "".join(s for s in self.inline if s is not _BR).strip():
            return False
        parts: list[str] = []
        _raw_text(code, parts)
        return "\n" in "".join(parts).strip() and all(
            c is code or (isinstance(c, str) and not c.strip()) for c in parent.children)

    def table(self, node: _Node) -> None:
        """A table: the text it holds outside its cells and its captions, then its rows as ``| cell | cell |``
        lines, or (a layout table) its cells' text in order."""
        rows: list[list[_Node]] = []
        captions: list[_Node] = []
        fostered = _Reader()  # text a table holds outside its cells: read before the table (as browsers show it)
        _collect_table(node, rows, captions, fostered)
        fostered.flush()
        self.items += fostered.items
        for cap in captions:
            self.items += _Reader().read(cap).items
        cells = [[(c, _Reader().read(c)) for c in row] for row in rows]
        layout = any(r.structured for row in cells for _, r in row) or all(
            sum(bool(r.items) for _, r in row) <= 1 for row in cells)
        if layout:  # a framed note, or a page laid out in a table: its cells' text in order
            for row in cells:
                for _, r in row:
                    self.items += r.items
                    self.structured |= r.structured
            return
        self.structured = True
        lines = _table_lines(rows, cells)
        self.block("\n".join(ln for ln in lines if ln))


def _collect_table(n: _Node, rows: list, captions: list, fostered: _Reader) -> None:
    """Gather a table's rows of cells, its captions, and into ``fostered`` what it holds outside its cells."""
    loose: list[_Node] = []  # cells outside a row: one row
    for c in n.children:
        if isinstance(c, str):
            fostered.inline.append(c)
            continue
        if _skipped(c) or c.tag in ("colgroup", "col"):
            continue
        if c.tag in ("td", "th"):
            loose.append(c)
            continue
        if loose:
            rows.append(loose)
            loose = []
        if c.tag == "tr":
            rows.append([x for x in c.children if isinstance(x, _Node) and x.tag in ("td", "th")
                         and not _skipped(x)])
            for x in c.children:  # anything else in a row is fostered too
                if isinstance(x, str):
                    fostered.inline.append(x)
                elif x.tag not in ("td", "th") and not _skipped(x):
                    fostered.walk_one(x)
        elif c.tag in ("thead", "tbody", "tfoot"):
            _collect_table(c, rows, captions, fostered)
        elif c.tag == "caption":
            captions.append(c)
        else:
            fostered.walk_one(c)
    if loose:
        rows.append(loose)


def _table_lines(rows: list[list[_Node]], cells: list[list[tuple[_Node, _Reader]]]) -> list[str]:
    """The rows as ``| cell | cell |`` lines ("" for an empty row), the header row (the first with a ``th``)
    first."""
    texts, pending = [], {}  # pending: column -> (rows left, text, columns) of a cell spanning rows down
    for row in cells:
        out, pending = _row_cells(row, pending)
        texts.append("| " + " | ".join(out) + " |" if any(out) else "")
    head = next((k for k, row in enumerate(rows) if any(c.tag == "th" for c in row)), 0)
    return [texts[head]] + texts[:head] + texts[head + 1:] if texts else []


def _row_cells(row: list[tuple[_Node, _Reader]], pending: dict) -> tuple[list[str], dict]:
    """One row's cell texts column by column, cells spanning down from rows above (``pending``) in their columns;
    and what spans on into the next row."""
    out, nxt, col, i = [], {}, 0, 0
    while i < len(row) or any(c >= col for c in pending):
        if col in pending:
            left, text, span = pending[col]
        elif i < len(row):
            cell, r = row[i]
            i += 1
            text = " ".join(" ".join(t.split()) for _, t in r.items).replace("|", "\\|")
            span = _int(cell.attrs.get("colspan", "1"), 1)
            left = _int(cell.attrs.get("rowspan", "1"), 1)
        else:
            col = min(c for c in pending if c >= col)
            continue
        out.append(text)
        if left > 1:
            nxt[col] = (left - 1, text, span)
        col += span
    return out, nxt


def _list_lines(node: _Node, depth: int = 0) -> list[str]:
    """A list's items as lines: "- item" or "3. item" (numbered from ``start``, or an item's ``value``); an item's
    further lines (its next paragraphs, a nested list, its code) indented under its text."""
    ordered = node.tag == "ol"
    n = _int(node.attrs.get("start", "1"), 1, lo=-10**9, hi=10**9)
    lines: list[str] = []
    for c in node.children:
        if isinstance(c, str):
            if c.strip():
                lines.append(" ".join(c.split()))
            continue
        if _skipped(c):
            continue
        if c.tag != "li":
            lines += [ln for _, t in _Reader().read(_wrap(c)).items for ln in t.split("\n")]
            continue
        if ordered and "value" in c.attrs:
            n = _int(c.attrs["value"], n, lo=-10**9, hi=10**9)
        marker = f"{n}. " if ordered else "- "
        n += 1
        item = [ln for _, t in _Reader().read(c).items for ln in t.split("\n")]
        item = [ln for ln in item if ln.strip()]
        if item:
            lines.append(marker + item[0].lstrip())
            lines += [" " * len(marker) + ln for ln in item[1:]]
    return lines


def _wrap(node: _Node) -> _Node:
    wrap = _Node("#wrap", {}, node.parent)
    wrap.children = [node]
    return wrap


def _decode(p: Path, raw: bytes) -> tuple[str, str, list[str]]:
    """The page's text: by its byte-order mark, else by its ``<meta charset>`` (errors replaced), else as any text
    file (UTF-8, else the detected encoding). Binary data is one IngestError."""
    if not raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        m = _META_CHARSET.search(raw[:4096])
        try:
            enc = codecs.lookup(m.group(1).decode("ascii")).name if m else None
        except LookupError:
            enc = None
        if enc in ("iso8859-1", "ascii"):
            enc = "cp1252"  # as browsers read both
        if enc and not enc.startswith(("utf-16", "utf-32")):  # a page that says UTF-16 in ASCII is not UTF-16
            sample = raw[:65536]
            text = raw.decode(enc, errors="replace")
            if sample.count(b"\x00") > max(1, len(sample) // 1000) or not looks_like_text(text[:20000]):
                raise IngestError(p, BINARY)
            return text, enc, []
    try:
        return decode_text(p, raw)
    except IngestError:
        raise IngestError(p, BINARY) from None


def parse_html(text: str, path: str, encoding: str | None = None) -> LoadedDocument:
    """Blocks of an already decoded page."""
    builder = _TreeBuilder()
    builder.feed(text.replace("\r\n", "\n").replace("\r", "\n"))
    builder.close()
    items = _Reader().read(builder.root).items
    title = " ".join((builder.title or "").split())
    heads = [t.casefold() for level, t in items if level is not None]
    if title and not any(level == 1 for level, _ in items) and title.casefold() not in heads:
        items.insert(0, (0, title))
    blocks: list[Block] = []
    path_: list[tuple[int, str]] = []
    for level, text in items:
        if level is None:
            blocks.append(Block(text=text, heading_path=tuple(t for _, t in path_)))
        else:
            path_ = [h for h in path_ if h[0] < level] + [(level, text)]
            blocks.append(Block(text=text, heading_path=tuple(t for _, t in path_), is_heading=True))
    return LoadedDocument(path=path, kind="html", blocks=blocks, pages=None, encoding=encoding)


def load_html(p: Path) -> LoadedDocument:
    text, enc, warnings = _decode(p, p.read_bytes())
    doc = parse_html(text, str(p), encoding=enc)
    doc.warnings.extend(warnings)
    file_under(doc.blocks, pages_above(text, str(p.resolve()), _sibling_reader(p)))
    return doc


_LINK = re.compile(r"<link\b[^>]*>", re.I)
_ATTR = re.compile(r"""\b(rel|href|title)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
HEAD_CHARS = 20_000  # a page's head: where its <title> and <link rel="up"> are looked for


def file_under(blocks: list[Block], above: tuple) -> None:
    """Each block's heading path headed by ``above`` (the titles of the pages above its page)."""
    for b in blocks:
        b.heading_path = above + tuple(h for h in b.heading_path if h not in above)


def pages_above(text: str, name: str, read, depth: int = 8) -> tuple:
    """The titles of the pages above page ``name`` (whose markup is ``text``) in its site or book, outermost first: its
    ``<link rel="up">`` and theirs (DocBook's and Texinfo's pages say which page they belong under), each named by the
    link's ``title`` or else by that page's ``<title>`` (both looked for in a page's first ``HEAD_CHARS`` characters).
    ``read(href)`` gives a linked page as (its name, its text), None when it is not one of the site's pages (outside the
    folder or book, not a page, missing, unreadable). The last page the chain reaches is the top (the home page, every
    page's; Texinfo's Top links up out of the site) and is left out; the chain also stops where it comes back round."""
    from html import unescape

    seen, chain = {name}, []
    up = _up_link(text)
    while up is not None:
        if len(chain) == depth:
            return tuple(t for t in reversed(chain) if t)  # no top reached
        found = read(re.split(r"[#?]", up["href"])[0])
        if found is None or found[0] in seen:
            break
        seen.add(found[0])
        m = _TITLE.search(found[1][:HEAD_CHARS])
        up, title = _up_link(found[1]), up.get("title") or (m.group(1) if m else "")
        chain.append(" ".join(unescape(title).split()))
    return tuple(t for t in reversed(chain[:-1]) if t)


PAGE_SUFFIXES = (".html", ".htm", ".xhtml")  # what a rel="up" link may name, on disk or in a book


def _sibling_reader(p: Path):
    """``pages_above``'s reader for a page on disk: the pages (.html, .htm, .xhtml) in its own folder, their first
    200,000 bytes, decoded as the page says."""
    folder = p.parent.resolve()

    def read(href: str) -> tuple[str, str] | None:
        target = (folder / href).resolve()
        if target.parent != folder or target.suffix.lower() not in PAGE_SUFFIXES or not target.is_file():
            return None
        try:
            with open(target, "rb") as f:
                return str(target), _decode(target, f.read(200_000))[0]
        except (OSError, IngestError):
            return None

    return read


def _up_link(text: str) -> dict | None:
    return next((a for a in map(_attrs, _LINK.findall(text[:HEAD_CHARS])) if a.get("rel", "").lower() == "up"
                 and a.get("href")), None)


def _attrs(tag: str) -> dict:
    return {m.group(1).lower(): next(g for g in m.groups()[1:] if g is not None) for m in _ATTR.finditer(tag)}
