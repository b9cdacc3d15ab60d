"""Text files (.txt, .text, .rst, .md, .markdown) as blocks in reading order.

Bytes to text (``decode_text``: BOMs, UTF-16 without one, charset detection with cp1250/cp1252 told apart by symbols
inside words, binary data refused), then ``parse_text``: Markdown headings (ATX and underlined) give heading paths,
fenced and indented code keep their lines; in plain text (reStructuredText's rules) underlined and overlined titles
and numbered section lines ("2.5. Memory", "Chapter 2", "ARTICLE I") are headings (``numbered_headings``, also used
for OCR'd PDF pages), box-drawn tables become ``| cell | cell |`` rows, and hard-wrapped lines are joined.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IngestError
from ..records import Block, LoadedDocument

_HEADING_MD = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^(=+|-+)\s*$")
_ADORN = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")  # plain text's (reStructuredText's) title adornments
_FENCE = re.compile(r"^\s*(```|~~~)")


_CODE_PAGES = {"cp1250": "Central European", "cp1252": "Western European"}  # short texts fit both alike


def _odd_in_words(text: str) -> int:
    """Symbols, superscripts and inverted marks touching a letter ("³azienk¹", "¿ó³w": Polish read as cp1252): a
    reading that has more of them than another is not as clean, whatever the detector says."""
    n = 0
    for i, c in enumerate(text):
        cat = unicodedata.category(c)
        if cat[0] == "S" or cat == "No" or c in "¿¡":
            n += (i > 0 and text[i - 1].isalpha()) or (i + 1 < len(text) and text[i + 1].isalpha())
    return n


def decode_text(p: Path, raw: bytes) -> tuple[str, str, list[str]]:
    """Decode bytes to text, detecting the encoding; reject binary data. Returns the text, the encoding and a
    warning when two code pages read it equally cleanly (the guess is then said, with the other reading)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", errors="replace"), "utf-8-sig", []
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16"), "utf-16", []
    sample = raw[:65536]
    if sample.count(b"\x00") > max(1, len(sample) // 1000):
        # UTF-16 without BOM looks like alternating NULs; anything else with NULs is binary
        for enc in ("utf-16-le", "utf-16-be"):
            try:
                text = raw.decode(enc)
            except UnicodeDecodeError:
                continue
            if looks_like_text(text[:20000]):
                return text, enc, []
        raise IngestError(p, "binary data, not text (NUL bytes found)")
    warnings: list[str] = []
    try:
        text = raw.decode("utf-8")
        enc = "utf-8"
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        matches = from_bytes(raw[:1_000_000])
        best = matches.best()
        if best is None:
            raise IngestError(p, "binary data or unknown text encoding") from None
        enc = best.encoding
        # a short text fits many code pages equally cleanly (a French note "is" cp775): when the best guess is no
        # Windows code page and Windows-1252 (which extends Latin-1) is as clean, it is the likelier one; a Windows
        # guess (a short Polish or Czech note: cp1250) stands
        windows = tuple(f"cp125{i}" for i in range(9))
        if not enc.startswith(windows) and any(m.chaos <= best.chaos + 0.01 and "cp1252" in m.could_be_from_charset
                                               for m in matches):
            enc = "cp1252"
        text = raw.decode(enc, errors="replace")
        other = next((o for o in _CODE_PAGES if o != enc), None) if enc in _CODE_PAGES else None
        if other and any(m.encoding == other and m.chaos <= best.chaos + 0.01 for m in matches):
            # the two Windows code pages read a short text alike to the detector: symbols inside words decide
            # ("Pokój z ³azienk¹" is Polish read as cp1252); a tie is said, with the other reading
            alt = raw.decode(other, errors="replace")
            odd, odd_alt = _odd_in_words(text[:20000]), _odd_in_words(alt[:20000])
            if odd_alt < odd:
                enc, text = other, alt
            elif odd_alt == odd and alt != text:
                line = next((ln.strip() for ln in alt.splitlines() if not ln.isascii()), "")
                warnings.append(f"the text encoding is a guess: {enc} ({_CODE_PAGES[enc]}) was taken, "
                                f"{other} ({_CODE_PAGES[other]}) reads it as cleanly (\"{line[:60]}\"); if accented "
                                f"letters look wrong, save the file as UTF-8")
    if not looks_like_text(text[:20000]):
        raise IngestError(p, "binary data, not text (too many control characters)")
    return text, enc, warnings


_LAID_OUT = re.compile(r"\S {3,}\S")  # a run of spaces inside a line: columns, a diagram
_KEEP_BREAK = re.compile(r"^\s*([-*+•]\s|\d+[.)]\s|[A-Za-z][.)]\s|\||>|#|\$ |```|~~~|[\u2500-\u257f])")  # last: trees


def _reflow_lines(lines: list[str], plain: bool = False) -> str:
    """Join hard-wrapped lines of one paragraph; keep breaks before list items, table rows, quotes,
    shell prompts and inside code (fenced or indented). In plain text also after a comment line ("#d-i ...") and
    around a line laid out with runs of spaces (a diagram, a header block)."""
    if any(_FENCE.match(ln) for ln in lines) or all(ln.startswith(("    ", "\t")) for ln in lines if ln.strip()):
        return "\n".join(lines)
    out: list[list[str]] = []  # each output line as its parts (joining strings one by one is O(n^2))
    for k, ln in enumerate(lines):
        before = lines[k - 1] if k else ""  # the line as written, not the joined one
        laid_out = plain and (before.lstrip().startswith("#") or bool(_LAID_OUT.search(ln) or _LAID_OUT.search(before)))
        if out and not laid_out and not _KEEP_BREAK.match(ln) and not ln.startswith(("    ", "\t")) \
                and not out[-1][-1].endswith("  ") and not out[-1][0].lstrip().startswith("|"):
            prev = out[-1][-1]
            if prev.endswith("-") and len(prev) > 1 and prev[-2].isalpha() and ln[:1].islower():
                out[-1][-1] = prev + ln.strip()  # hyphenated wrap
            else:
                out[-1][-1] = prev.rstrip()
                out[-1].append(ln.strip())
        else:
            out.append([ln.rstrip()])
    return "\n".join(" ".join(parts) for parts in out)


def looks_like_text(sample: str) -> bool:
    if not sample:
        return True
    bad = sum(1 for ch in sample if unicodedata.category(ch) in ("Cc", "Co", "Cn") and ch not in "\n\r\t\f")
    return bad / len(sample) < 0.02


def load_text(p: Path, markdown: bool) -> LoadedDocument:
    text, enc, warnings = decode_text(p, p.read_bytes())
    doc = parse_text(text, str(p), markdown, encoding=enc)
    doc.warnings.extend(warnings)
    return doc


def parse_text(text: str, path: str, markdown: bool, encoding: str | None = None) -> LoadedDocument:
    """Split already decoded text into blocks (Markdown headings give heading paths; in plain text, underlined
    titles and numbered section lines do, and box-drawn tables become pipe rows)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    doc = _TextBlocks(lines=text.split("\n"), markdown=markdown)
    if not markdown:
        doc.lines = _box_tables(doc.lines)
        doc.numbered, doc.title_lines = numbered_headings(doc.lines)
    for i, line in enumerate(doc.lines):
        doc.read_line(i, line)
    doc.flush()
    assign_offsets(doc.blocks)
    return LoadedDocument(path=path, kind="markdown" if markdown else "text", blocks=doc.blocks, encoding=encoding)


@dataclass
class _TextBlocks:
    """The document being built from a text's lines: its blocks, the open headings and the paragraph gathered."""
    lines: list[str]
    markdown: bool
    numbered: dict[int, tuple[int, str]] = field(default_factory=dict)
    title_lines: set[int] = field(default_factory=set)
    blocks: list[Block] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    para: list[str] = field(default_factory=list)
    in_fence: bool = False
    # plain text: adornment styles (character, overlined) in order of appearance
    styles: list[tuple[str, bool]] = field(default_factory=list)
    skip: set[int] = field(default_factory=set)  # an overlined title's title and underline lines, already read

    def flush(self) -> None:
        """Emit the paragraph gathered so far as a block (reflowed)."""
        if self.para:
            t = _reflow_lines(self.para, plain=not self.markdown).rstrip().lstrip("\n")
            t = t if re.search(r"\n[ \t]", t) else t.lstrip()  # a preformatted block keeps its first indentation
            if t:
                self.blocks.append(Block(text=t, heading_path=tuple(h for _, h in self.headings)))
            self.para.clear()

    def title_level(self, style: tuple[str, bool]) -> int:
        """Markdown: "=" 1, "-" 2; plain text (reStructuredText's rule): the style's order of first appearance."""
        if self.markdown:
            return 1 if style[0] == "=" else 2
        if style not in self.styles:
            self.styles.append(style)
        return self.styles.index(style) + 1

    def set_heading(self, level: int, title: str) -> None:
        """Open a heading at ``level`` (closing those at it or deeper) and emit its block."""
        self.flush()
        self.headings = [h for h in self.headings if h[0] < level] + [(level, title)]
        self.blocks.append(Block(text=title, heading_path=tuple(h for _, h in self.headings), is_heading=True))

    def read_line(self, i: int, line: str) -> None:
        """Read line ``i``: a fence or fenced line, a heading, a title's adornment, a blank line or a paragraph's."""
        if self.markdown and _FENCE.match(line):
            self.in_fence = not self.in_fence
            self.para.append(line)
            return
        if self.in_fence:
            self.para.append(line)
            return
        m = _HEADING_MD.match(line) if self.markdown else None
        if m and m.group(2):
            self.set_heading(len(m.group(1)), m.group(2).strip())
            return
        if i in self.skip or self.adorned_title(i, line):
            return
        if i in self.numbered and not self.para:
            self.set_heading(*self.numbered[i])
            return
        if i in self.title_lines:
            return  # "DEFINITIONS" under "ARTICLE I": part of that heading
        if not line.strip():
            self.flush()
            return
        self.para.append(line.rstrip())

    def adorned_title(self, i: int, line: str) -> bool:
        """Whether line ``i`` is taken as an overlined or underlined title (set as a heading) or a title's
        underline."""
        lines, para = self.lines, self.para
        adorned = _SETEXT if self.markdown else _ADORN  # a title's underline
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not self.markdown and not para and _ADORN.match(line) and nxt.strip() and len(nxt.strip()) < 120 \
                and i + 2 < len(lines) and lines[i + 2].strip()[:1] == line.strip()[0] and _ADORN.match(lines[i + 2]):
            self.set_heading(self.title_level((line.strip()[0], True)), nxt.strip())  # an overlined title
            self.skip.update((i + 1, i + 2))
            return True
        if line.strip() and adorned.match(nxt) and len(nxt.strip()) >= max(3, len(line.strip()) // 2) \
                and len(line.strip()) < 120 and not para:
            self.set_heading(self.title_level((nxt.strip()[0], False)), line.strip())
            return True
        return bool(adorned.match(line) and self.blocks and self.blocks[-1].is_heading and not para)


_BOX = re.compile("[\u2500-\u257f]")
_HORIZONTAL = re.compile("[\u2500\u2501\u2504\u2505\u2508\u2509\u254c\u254d\u2550]+")
_ROW_START, _ROW_END = "\u2502\u2503\u2551", "\u2502\u2503\u2551\u2524\u2528\u252b\u2562\u2563"


def _box_line(line: str) -> list[str] | None:
    """A line of a table drawn with box characters: [] for a rule, its cells for a row, None for any other line
    (a directory tree or lsblk's output draws with the same characters)."""
    s = line.strip()
    if not s or not _BOX.search(s):
        return None
    if not _BOX.sub("", s).strip():
        return [] if _HORIZONTAL.search(s) else None
    if s[0] not in _ROW_START or s[-1] not in _ROW_END:
        return None
    return [" ".join(c.split()) for c in _BOX.split(_HORIZONTAL.sub(" ", s))[1:-1]]  # bars and joints part cells


def _box_tables(lines: list[str]) -> list[str]:
    """Tables drawn with box characters as "| cell | cell |" rows, their rules dropped. Where rules part the rows,
    the lines between two rules are one row whose cells wrapped (joined cell by cell); a box of one column (a
    framed note) is its text."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        run: list[list[str]] = []
        while i + len(run) < len(lines) and (cells := _box_line(lines[i + len(run)])) is not None:
            run.append(cells)
        if not any(run):  # no table here (or rules alone: a separator line)
            if not run:
                out.append(lines[i])
            i += max(1, len(run))
            continue
        i += len(run)
        groups, cur = [], []
        for cells in run + [[]]:
            if cells:
                cur.append(cells)
            elif cur:
                groups.append(cur)
                cur = []
        rows = []
        for g in groups:
            ruled_apart = len(groups) > 2 and len(g) > 1 and len({len(c) for c in g}) == 1
            rows += [[" ".join(filter(None, col)) for col in zip(*g)]] if ruled_apart else g
        if all(len(r) == 1 for r in rows):
            out.append(" ".join(r[0] for r in rows if r[0]))
        else:
            out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


_WORD_RANK = {"Part": 0, "PART": 0, "Chapter": 1, "CHAPTER": 1, "Appendix": 1, "APPENDIX": 1, "Article": 1,
              "ARTICLE": 1, "Section": 2, "SECTION": 2}
_WORD_HEADING = re.compile(r"(?P<word>" + "|".join(_WORD_RANK) + r")(?:\s*(?=\d)|\s+)(?P<label>\d{1,3}|[A-Z]|[IVXLC]+)"
                           r"(?P<sub>(?:\.\d{1,3})*)[.:]?(?:\s+(?:[-\u2013\u2014]\s+)?(?P<title>[^\W\d_].*))?")
_NUM_HEADING = re.compile(r"(?P<num>[1-9]\d?|(?:[1-9]\d?|0|[A-Z])(?:\.(?:0|[1-9]\d{0,2}))+)\.?\s+(?P<title>[^\W\d_].*)")


def bare_word_heading(line: str) -> bool:
    """A "Chapter 2" / "APPENDIX B" / "Chapter2" line with no title of its own."""
    m = _WORD_HEADING.fullmatch(" ".join(line.split()))
    return bool(m) and not m.group("title")


def numbering_follows(a: list[str], b: list[str]) -> bool:
    """Whether section number ``b`` can come right after ``a`` (2.4.6 -> 2.5, 2.5 -> 2.5.1, 2.5 -> 3, 8 -> A,
    A.5 -> B), as parts: ["2", "4", "6"]."""
    if b == a + ["1"]:
        return True
    for d in range(len(a), 0, -1):
        p = a[d - 1]
        nxt = str(int(p) + 1) if p.isdigit() else chr(ord(p[-1]) + 1)
        if b == a[:d - 1] + [nxt]:
            return True
    return b == ["A"] and a[0].isdigit()


def _plain_title(title: str) -> bool:
    """A heading's title, not text: no lower-case start, no sentence inside or at its end, no page number or
    section number in it."""
    return not (title[:1].islower() or re.search(r"[.,;:]$|[.;:]\s|\s\d{1,4}$|\d\.\d", title))


def numbered_headings(lines: list[str]) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """Plain text's numbered section lines: {line index: (level, title)}, and the lines that only carried a title.
    "Chapter 2. System Requirements", "ARTICLE I" with "DEFINITIONS" on the next line or after a blank line (after a
    word: Part > Chapter, Appendix, Article > Section; a blank line before, the next line may be text), and, each
    standing between blank lines, "2.5. Memory and Disk Space Requirements" where dotted numbers form a numbering (two
    or more, most following the number before: a lone "1.5 GHz Processor" is text) and "1.  Introduction" where a single
    number leads into that numbering (its "1.1" comes next, or it follows a section: numbered steps "1. Download" stay
    text). Levels rank the kinds found: a word's, then numbers by their parts. Also text: a table of contents (no blank
    lines between its entries), a contents line ending in its page number, a line of cross-references and a heading run
    into its text ("4.7 LICENSE. Reseller shall")."""
    found, titles = [], {}  # found: (line index, rank, number parts, title, kind: word | dotted | single)
    for i, line in enumerate(lines):
        text = " ".join(line.split())
        before = i == 0 or not lines[i - 1].strip()
        after = "" if i + 1 == len(lines) else " ".join(lines[i + 1].split())
        if not text or len(text) > 80 or len(line) - len(line.lstrip()) > 3 or not before:
            continue
        m = _WORD_HEADING.fullmatch(text)
        if m and (not m.group("title") or _plain_title(m.group("title"))) \
                and not (_NUM_HEADING.fullmatch(after) or _WORD_HEADING.fullmatch(after)):  # not a contents entry
            parts = (m.group("label") + (m.group("sub") or "")).split(".")
            t = _title_below(lines, i) if not m.group("title") else None
            if t is not None:
                titles[i] = t
                text += " " + " ".join(lines[t].split())
            found.append((i, _WORD_RANK[m.group("word")] + len(parts) - 1, parts, text, "word"))
            continue
        m = _NUM_HEADING.fullmatch(text)
        if m and not after and _plain_title(m.group("title")):
            parts = m.group("num").split(".")
            found.append((i, 10 + len(parts), parts, text, "dotted" if len(parts) > 1 else "single"))
    leads = {n for n, (f, g) in enumerate(zip(found, found[1:]))  # "1." right before its "1.1."
             if f[4] == "single" and g[4] == "dotted" and g[2] == f[2] + ["1"]}
    sure = [f for n, f in enumerate(found) if f[4] != "single" or n in leads]
    following = sum(numbering_follows(a[2], b[2]) for a, b in zip(sure, sure[1:]))
    numbering = sum(f[4] == "dotted" for f in sure) >= 2 and following >= (len(sure) - 1) / 2
    kept = []
    for n, f in enumerate(found):
        if f[4] == "single":  # a single number leads into the numbering, or goes on from a kept section
            if not (numbering and (n in leads or (kept and numbering_follows(kept[-1][2], f[2])))):
                continue
        elif f[4] == "dotted" and not numbering:
            continue
        kept.append(f)
    levels = {r: n + 1 for n, r in enumerate(sorted({f[1] for f in kept}))}
    return {i: (levels[rank], text) for i, rank, _, text, _ in kept}, {titles[i] for i, *_ in kept if i in titles}


def _title_below(lines: list[str], i: int) -> int | None:
    """The line holding the title of the bare "Chapter 2" / "ARTICLE I" on line ``i``: the next line, or, where a
    typeset page leaves a gap, the one after a blank line; a short title-like line standing alone (a blank line or
    the end after it)."""
    for t in (i + 1, i + 2):
        if t >= len(lines) or (t == i + 2 and lines[i + 1].strip()):
            return None
        title = " ".join(lines[t].split())
        if title:
            alone = t + 1 == len(lines) or not lines[t + 1].strip()
            heading = _WORD_HEADING.fullmatch(title) or _NUM_HEADING.fullmatch(title)  # a heading of its own
            return t if len(title) <= 60 and _plain_title(title) and alone and not heading else None
    return None


def assign_offsets(blocks: list[Block]) -> None:
    """Each block's ``char_start``: its offset in the document's full text (blocks joined by a blank line)."""
    pos = 0
    for b in blocks:
        b.char_start = pos
        pos += len(b.text) + 2
