"""The span check: every command, flag, path, number with its unit, setting and the value it is given, version,
quoted label and key name a model's answer holds, looked up in the sources it read.

A manual is followed because it is exact; a small model rewrites it. What can be checked by code is the part a
user would type or set: ``spans`` finds those pieces of an answer, ``check`` marks each as found in the sources or
not (``Span.found``). A sentence without such spans (a paraphrase) is not checked; README says so.

How a span is looked up: texts are compared lower-cased, with typographic quotes and dashes made plain and runs of
whitespace as one space; paths, URLs and file names also with every space removed (PDF extraction breaks
``https://www. debian.org``); a number with its unit by value and unit (``1 GB``, ``1GB`` and ``1 gigabyte`` are one);
a command line without its prompt (``$``, ``#``, ``sudo``), whole, else word by word: the words of a command the
sources do not hold are what is flagged (``dd if=x.iso of=/dev/sdX bs=4M`` -> ``bs=4M``). In a code block every line
is a command, whatever its first word; in prose a bare command name is one only from a fixed list (``COMMAND_WORDS``).

A name and the value it is given are looked up together, so a value the sources give another name is flagged
(``port = 8443`` where they have ``port = 9443`` and ``backup_port = 8443``):
- ``setting``: ``key=value``, and ``key = value`` with spaces: the name with the value beside it (``=``, ``:``, ``|``, a
  space or a few small words such as "is" or "to" between);
- ``value``: a number without a unit where it is a port's or a setting's (``port 9443``, ``listen on 8080``,
  ``MaxConnections 500``, ``timeout: 30``): looked up the same way; a count in prose (``3 steps``) is no span;
- ``assignment``: ``set X to Y`` / ``change X to Y`` in prose: ``Y`` in one line or sentence of the sources with ``X``
  (its words, its words run together as in ``ListenAddress``, or its last word);
- ``version``: three-part numbers and ``version 3.3`` as written; a product's name with a number (``Debian 13``,
  ``kernel 6.1``, ``TLS 1.2``): the number within a few words after the name (``Debian GNU/Linux 13``).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

DANGEROUS = ("command", "flag", "path", "url", "file", "setting")  # what the strict setting drops a sentence for


@dataclass
class Span:
    text: str                 # as the answer writes it
    kind: str                 # command | flag | path | url | file | setting | value | assignment | number | version
    #                           | label | key
    start: int = 0            # offsets in the text checked
    end: int = 0
    found: bool = True        # the sources read hold it
    missing: list = field(default_factory=list)  # a command's words the sources do not hold (all of it: [text])
    key: str = ""             # a setting's, value's or version's name, looked up with ``value`` (none: the text as is)
    value: str = ""
    computed: str = ""        # a percentage the sources do not print but two of their figures give, and how
    #                           ("30.8% = (177,866 - 135,987) / 135,987")


# --- finding spans ---------------------------------------------------------------------------------------------
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`)\]]+")
PATH = re.compile(r"(?<![\w/.:~-])(?:~|\.{1,2})?/(?:[\w.+@%-]+/?)+|\b[A-Za-z]:\\[\w\\.-]+")
FLAG = re.compile(r"(?<![\w/-])--?[A-Za-z][\w-]*(?:=[^\s,;`'\")]+)?")
SETTING = re.compile(r"(?<![\w/=.-])[A-Za-z_][\w.-]*=[^\s,;`'\")]+")
FILE = re.compile(r"(?<![\w/.@-])[A-Za-z0-9_][\w+-]*(?:\.[A-Za-z0-9_+-]+)+")
UNITS = {"kb": "kb", "kib": "kib", "kilobyte": "kb", "kilobytes": "kb", "kibibyte": "kib", "kibibytes": "kib", "k": "k",
         "mb": "mb", "mib": "mib", "megabyte": "mb", "megabytes": "mb", "mebibyte": "mib", "mebibytes": "mib", "m": "m",
         "gb": "gb", "gib": "gib", "gigabyte": "gb", "gigabytes": "gb", "gibibyte": "gib", "gibibytes": "gib", "g": "g",
         "tb": "tb", "tib": "tib", "terabyte": "tb", "terabytes": "tb", "tebibyte": "tib", "tebibytes": "tib", "t": "t",
         "byte": "b", "bytes": "b", "b": "b", "bit": "bit", "bits": "bit",
         "hz": "hz", "khz": "khz", "mhz": "mhz", "ghz": "ghz",
         "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s",
         "seconds": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "h": "h", "hour": "h",
         "hours": "h", "day": "day", "days": "day", "%": "%", "percent": "%",
         "v": "v", "volt": "v", "volts": "v", "w": "w", "watt": "w", "watts": "w", "ma": "ma",
         "px": "px", "dpi": "dpi", "rpm": "rpm", "cores": "core", "core": "core", "cpus": "cpu", "cpu": "cpu"}
_UNIT_ALT = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
NUMBER = re.compile(rf"(?<![\w.])(\d+(?:[.,]\d+)*)\s?({_UNIT_ALT})(?![\w])", re.I)
VERSION = re.compile(r"(?<![\w.])(?:v|version\s+)?\d+(?:\.\d+){2,}\b|\b(?:[Vv]ersion|[Rr]elease)\s+\d+(?:\.\d+)*\b"
                     r"|(?<![\w.])v\d+(?:\.\d+)+\b")
QUOTED = re.compile(r"\"([^\"\n]{2,60})\"|“([^”\n]{2,60})”")
BOLD = re.compile(r"\*\*([^*\n]{2,60})\*\*|__([^_\n]{2,60})__")
KEY = re.compile(r"\b(?:Ctrl|Control|Alt|AltGr|Shift|Super|Cmd|Command|Meta|Fn|Win)(?:\s*[+-]\s*(?:F\d{1,2}|[A-Z][a-z]*|[A-Z0-9]))+"
                 r"|\bF(?:[1-9]|1[0-2])\b"
                 r"|\b(?:the\s+)?(?:Ctrl|Control|Alt|AltGr|Shift|Super|Enter|Return|Esc|Escape|Tab|Delete|Del|Backspace|"
                 r"Space|Insert|Home|End|PgUp|PgDn|Page Up|Page Down|Print Screen|SysRq|Windows|Option)\s+key\b"
                 r"|\b[Pp]ress(?:ing)?\s+(?:Enter|Return|Esc|Escape|Tab|Space|Delete|Backspace|[A-Z])\b")
# a name and its value (module docstring); each quantifier is bounded or runs over characters the next part cannot
# start with, so a long line is scanned in linear time
SETTING_WORDS = r"(?:port|timeout|mtu|ttl|umask|uid|gid|vlan)"
_KEYISH = (r"(?:[a-z]{1,40}(?:[A-Z][a-z0-9]{0,40}){1,8}|(?:[A-Z][a-z0-9]{1,40}){2,8}"  # maxConn, MaxConnections
           r"|[A-Za-z][A-Za-z0-9]{0,40}(?:[._][A-Za-z0-9]{1,40}){1,6})")  # max_conn, net.ip_forward (with a "_")
_NO_UNIT = rf"(?![\w%]|\\?[.,]\d|\s?(?i:{_UNIT_ALT})(?!\w))"  # not 30 s, not 3 of 3\.6 (Markdown's escape)
_BARE = r"\d{1,9}(?:,\d{3})*(?:\.\d+)*"  # 9443, 1,000, 0.0.0.0
_WHOLE = r"(?:\d{1,3}(?:\.\d{1,3}){3}|\d{1,9}(?:,\d{3})*)"  # an address or a whole number: not TensorFlow 1.11
VALUE = re.compile(rf"(?i:\b(?P<listen>listen)(?:s|ing)?[ \t]+on(?:[ \t]+port)?"
                   rf"|\b(?P<word>{SETTING_WORDS})s?:?(?:[ \t]+(?:number|no\.|is|of))?)"
                   rf"[ \t]+`?(?P<v>{_WHOLE}){_NO_UNIT}`?"
                   rf"|(?<![\w.`])`?(?P<ident>{_KEYISH})`?:?[ \t]+`?(?P<iv>{_WHOLE}){_NO_UNIT}`?")
SETTING_SPACED = re.compile(r"(?<![\w/=.<>!?&:-])`?(?P<k>[A-Za-z_][\w.-]{1,60})`?(?:[ \t]+=[ \t]*|=[ \t]+)(?!=)"
                            rf"`?(?P<v>[^\s,;`'\")(\[{{]{{1,200}})(?=[\s,;`'\")]|$){_NO_UNIT}`?")  # whole; 10 GB: a number
_VERB = r"\b(?i:set(?:s|ting)?|chang(?:e|es|ed|ing))"
_X_WORD = r"(?!(?i:to|and|or|then)\b)[A-Za-z][\w.-]{0,40}"  # "set A to no and B to 5" gives no X "A to no and B"
_X = rf"(?:`[^`\n]{{1,40}}`|\"[^\"\n]{{1,40}}\"|{_X_WORD}(?:[ \t]+{_X_WORD}){{0,4}}?)"
_Y = rf"(?:`[^`\n]{{1,60}}`|\"[^\"\n]{{1,60}}\"|(?<![\w.]){_BARE}{_NO_UNIT}|[A-Za-z_][\w-]{{0,40}}\d[\w.:-]{{0,40}})"
ASSIGNMENT = re.compile(rf"{_VERB}[ \t]+(?P<x>{_X})(?:[ \t]+from[ \t]+\S{{1,60}})?[ \t]+to[ \t]+(?P<y>{_Y})")
X_STOP = {"it", "this", "that", "them", "these", "those", "one", "up", "out", "off", "aside", "back", "apart", "from",
          "all", "everything", "something", "yourself", "down", "in", "on", "value", "setting", "option", "number"}
X_FILLER = re.compile(r"^(?:(?:the|a|an|your|its|their|this|that)\s+)?(?:(?:value|number)\s+of\s+(?:the\s+)?)?", re.I)
PRODUCTS = (r"debian|ubuntu|fedora|centos|rhel|windows|macos|ios|android|python|java|jdk|node(?:\.js)?|php|perl|ruby|"
            r"kernel|linux|postgresql|postgres|mysql|mariadb|mongodb|redis|kubernetes|docker|nginx|openssl|openssh|gcc|"
            r"clang|llvm|cuda|gnome|kde|firefox|chrome|xcode|usb|pcie|bluetooth|tls|ssl|grub|systemd")
NOT_PRODUCTS = r"(?:FIG|TABLE|STEP|SECTION|CHAPTER|PAGE|PART|NOTE|ITEM|USD|EUR|GBP|JPY|CAD|AUD|CHF)\b"
VERSION_NAMED = re.compile(rf"(?i:\b(?P<p>{PRODUCTS}))[ \t]+v?(?P<n>\d{{1,3}}(?:\.\d{{1,4}})?)(?!\w|\\?\.\d)"
                           rf"|\b(?!{NOT_PRODUCTS})"
                           r"(?P<q>[A-Z]{2,6}|[a-z]+[A-Z][A-Za-z]{0,20}|[A-Z][a-z]+[A-Z][A-Za-z]{0,20})"  # TLS, macOS
                           r"[ \t]+(?P<m>\d{1,3}\.\d{1,4})(?!\w|\\?\.\d)")
PROMPT = re.compile(r"^\s*(?:[$#>]\s+|sudo\s+)+")
COMMAND_LINE = re.compile(r"^\s*(?:\$\s+|#\s+(?=(?:[a-z]|\.?/)[\w./+-]*(?:\s|$))|sudo\s+)\S")
# command names that are no English word: such a name anywhere is a command span
COMMAND_WORDS = re.compile(
    r"(?<![\w/.-])(?:lsblk|blkid|fdisk|gdisk|sfdisk|cfdisk|parted|gparted|mkfs(?:\.\w+)?|mkswap|swapon|swapoff|dd|"
    r"umount|fsck(?:\.\w+)?|e2fsck|tune2fs|resize2fs|lvcreate|vgcreate|pvcreate|cryptsetup|mdadm|grub-install|"
    r"update-grub|grub-mkconfig|efibootmgr|debootstrap|dpkg(?:-\w+)*|apt-get|apt-cache|aptitude|systemctl|journalctl|"
    r"chroot|chmod|chown|chgrp|wget|curl|rsync|scp|sha256sum|sha512sum|md5sum|gpg|ssh-keygen|modprobe|lsmod|"
    r"insmod|rmmod|lspci|lsusb|dmesg|ifconfig|iwconfig|dhclient|nmcli|usermod|useradd|passwd|visudo|"
    r"update-initramfs|mkinitramfs|zpool|zfs|btrfs|isohybrid|xorriso|genisoimage|syslinux|extlinux|"
    r"debconf-set-selections|debconf-get-selections|anna-install|pkill)(?![\w-])")
ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "cf", "a.m", "p.m", "no", "fig", "approx", "u.s", "ph.d", "et.al"}
LABEL_STOP = {"note", "warning", "important", "tip", "caution", "example", "step", "steps", "summary", "answer",
              "source", "sources", "yes", "no", "optional", "required", "recommended", "danger"}


def _add(out: list, text: str, kind: str, start: int, taken: list, key: str = "", value: str = "") -> None:
    end = start + len(text)
    text = text.rstrip(".,;:!?")
    end = start + len(text)
    i = bisect.bisect_left(taken, (start, end))  # taken: the spans' (start, end), in order, none overlapping
    if len(text.strip()) < 2 or (i and taken[i - 1][1] > start) or (i < len(taken) and taken[i][0] < end):
        return
    taken.insert(i, (start, end))
    out.append(Span(text, kind, start, end, key=key, value=value.rstrip(".,;:!?")))


COMMENT = re.compile(r"(?:^|\s)#\s.*$")
PROSE_COMMENT = re.compile(r"^\s*#\s+[A-Za-z][a-z]*(?:\s+[a-z][a-z']*){2,}[.:]?\s*$")  # "# refresh the lists"


def spans(text: str, in_code: bool = False, line_start: bool = True) -> list[Span]:
    """The checkable spans of ``text`` (a line, a sentence or a whole answer), in order. ``in_code``: the text
    starts inside a fenced code block; ``line_start``: it starts a line (a streamed answer is checked a sentence at
    a time: a sentence in the middle of a line is no command line for starting with "sudo")."""
    out: list[Span] = []
    taken: list[tuple[int, int]] = []
    at = 0
    for i, line in enumerate(text.splitlines(keepends=True)):
        starts = line_start or i > 0
        if FENCE.match(line):
            in_code = not in_code
        elif in_code or (starts and COMMAND_LINE.match(line)):
            body = _code(line)
            if body:
                _add(out, body, "command", at + line.index(body), taken)
        else:
            _line_spans(line, at, out, taken)
        at += len(line)
    out.sort(key=lambda s: s.start)
    return out


def _code(line: str) -> str:
    """A code line without its comment ("# tftp client address" inside a block, or after a command); a line that is
    nothing but a comment in words is no command."""
    if PROSE_COMMENT.match(line):
        return ""
    head = line.strip()
    prompt = 1 if head.startswith("#") else 0  # a leading "# " is a root prompt, not a comment
    m = COMMENT.search(head[prompt:])
    return head[:m.start() + prompt].rstrip() if m else head


def _line_spans(line: str, at: int, out: list, taken: list) -> None:
    _pair_spans(line, at, out, taken)
    for m in INLINE_CODE.finditer(line):
        body = m.group(1).strip()
        if body:
            kind, key, value = _pair_of(body) or (_kind_of(body), "", "")
            _add(out, body, kind, at + m.start(1) + m.group(1).index(body), taken, key, value)
    for m in URL.finditer(line):
        _add(out, m.group(0), "url", at + m.start(), taken)
    for m in PATH.finditer(line):
        if m.group(0).count("/") + m.group(0).count("\\") >= 1 and len(m.group(0)) > 2 and not _fraction(m.group(0)):
            _add(out, m.group(0), "path", at + m.start(), taken)
    for m in SETTING.finditer(line):
        _add(out, m.group(0), "setting", at + m.start(), taken)
    for m in FLAG.finditer(line):
        if _flag_like(line, m):
            _add(out, m.group(0), "flag", at + m.start(), taken)
    for m in KEY.finditer(line):
        _add(out, m.group(0), "key", at + m.start(), taken)
    for m in NUMBER.finditer(line):
        if _unit_ok(line, m):
            _add(out, m.group(0), "number", at + m.start(), taken)
    for m in VERSION.finditer(line):
        _add(out, m.group(0), "version", at + m.start(), taken)
    for m in VERSION_NAMED.finditer(line):
        name, number = m.group("p") or m.group("q"), m.group("n") or m.group("m")
        _add(out, m.group(0), "version", at + m.start(), taken, name, number)
    for m in FILE.finditer(line):
        word = m.group(0).rstrip(".")
        if _file_like(word):
            _add(out, word, "file", at + m.start(), taken)
    for m in COMMAND_WORDS.finditer(line):
        _add(out, m.group(0), "command", at + m.start(), taken)
    for label, start, _ in _labels(line):
        _add(out, label, "label", at + start, taken)


def _labels(line: str):
    """A line's quoted and bold UI labels: (label, start, end of the quote or bold that holds it)."""
    for pattern in (QUOTED, BOLD):
        for m in pattern.finditer(line):
            g = 1 if m.group(1) is not None else 2
            label = m.group(g).strip()
            if pattern is BOLD and line[m.end():m.end() + 1] == ":":  # "**Identify the device**:" titles a step
                continue
            if _label_like(label):
                yield label, m.start(g) + m.group(g).index(label), m.end()


def _pair_spans(line: str, at: int, out: list, taken: list) -> None:
    """A line's names given values: ``set X to Y``, ``key = value`` and a port's or setting's bare number. Inline code
    and labels holding a space are masked first: each is one span of its own (a command, a label), not a piece of
    these."""
    line = INLINE_CODE.sub(lambda m: m.group(0) if not re.search(r"\s", m.group(1)) else "\0" * len(m.group(0)), line)
    masked = [(start - 1, end) for label, start, end in _labels(line) if " " in label]
    if masked:
        chars = list(line)
        for start, end in masked:
            chars[start:end] = "\0" * (end - start)
        line = "".join(chars)
    for m in (m for m in ASSIGNMENT.finditer(line) if "\0" not in m.group(0)):
        x, y = _unquoted(m.group("x")), _unquoted(m.group("y"))
        if _names_something(x):
            _add(out, m.group(0), "assignment", at + m.start(), taken, x, y)
    for m in (m for m in SETTING_SPACED.finditer(line) if "\0" not in m.group(0)):
        _add(out, m.group(0), "setting", at + m.start(), taken, m.group("k"), m.group("v"))
    for m in VALUE.finditer(line):
        key = m.group("listen") or m.group("word") or m.group("ident")
        if m.group("ident") is None or _keyish(key):
            _add(out, m.group(0), "value", at + m.start(), taken, key, m.group("v") or m.group("iv"))


def _pair_of(code: str) -> tuple | None:
    """An inline code span that is a name given a value (``port = 8443``, ``MaxConnections 500``): its kind, name and
    value."""
    m = SETTING_SPACED.fullmatch(code)
    if m:
        return "setting", m.group("k"), m.group("v")
    m = VALUE.fullmatch(code)
    if m and (m.group("ident") is None or _keyish(m.group("ident"))):
        return "value", m.group("listen") or m.group("word") or m.group("ident"), m.group("v") or m.group("iv")
    return None


def _unquoted(text: str) -> str:
    return text.strip("`\"")


def _names_something(x: str) -> bool:
    """``set X to Y``: X names a thing (not "set it to", "set up the disk to")."""
    words = X_FILLER.sub("", x).split()
    return bool(words) and words[0].lower() not in X_STOP


def _keyish(word: str) -> bool:
    """A name written as a setting's: with an inner capital (MaxConnections) or an underscore (max_connections)."""
    return "_" in word or bool(re.search(r"[a-z0-9][A-Z]", word))


def _kind_of(code: str) -> str:
    """An inline code span's kind, by its shape."""
    for kind, pattern in (("url", URL), ("path", PATH), ("flag", FLAG), ("setting", SETTING)):
        m = pattern.fullmatch(code)
        if m:
            return kind
    if NUMBER.fullmatch(code):
        return "number"
    return "command"


def _fraction(text: str) -> bool:
    return bool(re.fullmatch(r"\d+/\d+", text)) or text.startswith("//")


def _flag_like(line: str, m: re.Match) -> bool:
    word = m.group(0)
    if word.startswith("--"):
        return len(word) > 3
    before = line[:m.start()]
    # "-x" only where a command option is written: after a word that is not a list bullet, and short
    return len(word) <= 4 and bool(before.strip()) and not re.search(r"(?:^|\s)[-*•]\s*$", before)


def _unit_ok(line: str, m: re.Match) -> bool:
    """A number with a one-letter unit (``4M``, ``5 s``) only when written close together or a known pair."""
    unit = m.group(2).lower()
    if len(unit) == 1 and unit not in ("%",):
        if " " in m.group(0):
            return False
        if unit in ("s", "h", "v", "w", "b") and not re.fullmatch(r"\d+(?:\.\d+)?[sShHvVwWbB]", m.group(0)):
            return False
    return True


def _file_like(word: str) -> bool:
    parts = word.split(".")
    if len(parts) < 2 or word.lower().rstrip(".") in ABBREVIATIONS or word.lower() in ABBREVIATIONS:
        return False
    if all(p.isdigit() for p in parts):  # 1.5, 2.5.3: a number or a version
        return False
    if any(not p for p in parts) or len(parts[-1]) < 2 and not parts[-1].isdigit():
        return False
    if re.fullmatch(r"\d+(?:\.\d+)*[A-Za-z]{0,3}", word):  # 2.5GHz
        return False
    return any(c.isalpha() for c in parts[0]) and any(c.isalnum() for c in parts[-1])


def _label_like(label: str) -> bool:
    words = label.split()
    if not words or len(words) > 8 or label.lower().rstrip(":. ") in LABEL_STOP:
        return False
    if re.match(r"(?i)step\s+\d+", label) or label.endswith(":"):
        return False
    return True


# --- looking spans up ------------------------------------------------------------------------------------------
_PLAIN = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-", "‐": "-", "‑": "-", "−": "-",
                        "\u00ad": None, "\u00a0": " ", "\u2009": " ", "\u202f": " "})


def plain(text: str) -> str:
    """Lower case, typographic quotes and dashes plain, whitespace runs one space."""
    return " ".join(text.translate(_PLAIN).lower().split())


MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash before ASCII punctuation escapes it


def md_unescaped(text: str) -> str:
    """``text`` with Markdown's backslash escapes read as the characters they escape (``ml\\.eia2`` -> ``ml.eia2``)."""
    return MD_ESCAPE.sub(r"\1", text)


class SourceText:
    """The text an answer is checked against (the sources it read), prepared once for many lookups. Sources taken
    from Markdown may escape punctuation (``\\.``, ``\\(``): they are looked in as written and as they read."""

    def __init__(self, texts: list[str]):
        joined = "\n".join(texts)
        unescaped = md_unescaped(joined)
        if unescaped != joined:
            joined += "\n" + unescaped
        self.joined = joined
        self.plain = plain(joined)
        self.tight = _squeeze(self.plain)
        self.numbers = {_number_key(m) for m in NUMBER.finditer(joined.translate(_PLAIN))}
        self.memo: dict = {}  # lookups of a name's values, made once
        self._pieces: dict | None = None
        self._figures: list | None = None

    def figure_lines(self) -> list[list[tuple[float, str]]]:
        """Each line's figures of 1 or more, as written ("177,866"), years aside, for the lines that hold two or
        more; made on the first call."""
        if self._figures is None:
            self._figures = []
            for line in self.joined.splitlines():
                found = [(float(t.replace(",", "")), t) for t in FIGURE.findall(line)
                         if not re.fullmatch(r"(?:19|20)\d\d", t)]
                found = [f for f in found if f[0] >= 1][:12]
                if len(found) >= 2:
                    self._figures.append(found)
        return self._figures

    def holding(self, value: str) -> list[str]:
        """The sources' lines and sentences (a sentence may run over a paragraph's wrapped lines), each plain, that
        hold ``value`` as a word (a number also with a unit after it); indexed on the first call."""
        if self._pieces is None:
            lines = [plain(line) for line in self.joined.splitlines()]
            sentences = [s for para in re.split(r"\n[ \t]*\n", self.joined)
                         for s in re.split(r"(?<=[.!?])\s+", plain(para))]
            self._pieces = {}
            for piece in dict.fromkeys(p for p in lines + sentences if p):
                for word in set(TOKEN.findall(piece)):
                    for k in _token_keys(word):
                        self._pieces.setdefault(k, []).append(piece)
        return self._pieces.get(value, [])

    def holds(self, text: str, tight: bool = False) -> bool:
        """``text`` is in the sources (``tight``: also with the spaces beside signs removed from both, for a path or URL
        that extraction broke; only for a text of 4+ characters holding a sign)."""
        p = plain(text)
        if not p:
            return True
        if _has(self.plain, p):
            return True
        squeezed = _squeeze(p)
        return tight and len(squeezed) >= 4 and not squeezed.isalnum() and _has(self.tight, squeezed)

    def holds_name(self, name: str) -> bool:
        """A command's name is in the sources as a name of its own: ``apt`` is not found in ``apt-get``, nor
        ``nvidia-installer`` in ``nvidia-installer-legacy``."""
        p = plain(name)
        return not p or _has(self.plain, p, _name_inner) or (
            len(p) >= 4 and "-" in p and _has(self.tight, _squeeze(p), _name_inner))


def _squeeze(text: str) -> str:
    """Spaces beside a path's or URL's signs removed (``https://www. debian.org/`` as PDF extraction breaks it)."""
    return re.sub(r"\s*([/.:=_~-])\s*", r"\1", text)


def _has(hay: str, p: str, inner=None) -> bool:
    """``p`` in ``hay``, not as a piece of a longer word (``/dev/sda`` is not found in ``/dev/sdab``; ``inner``: what
    a word is made of, letters, digits and ``_`` unless told)."""
    inner = inner or _inner
    start = 0
    while True:
        i = hay.find(p, start)
        if i < 0:
            return False
        before = hay[i - 1] if i else " "
        after = hay[i + len(p)] if i + len(p) < len(hay) else " "
        if not (inner(before) and inner(p[0])) and not (inner(after) and inner(p[-1])):
            return True
        start = i + 1


def _inner(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _name_inner(ch: str) -> bool:
    return ch.isalnum() or ch in "_-"


def _number_key(m: re.Match) -> tuple:
    value = m.group(1).replace(",", "")
    try:
        value = f"{float(value):g}"
    except ValueError:
        pass
    return value, UNITS.get(m.group(2).lower(), m.group(2).lower())


SEP = r"[\s=:|*\"'`()\[\],;]"  # between a name and its value in the sources, and these small words
GAP_WORDS = {"is", "are", "to", "of", "on", "at", "be", "set", "number", "no", "no.", "default", "defaults", "value",
             "equal", "equals", "port"}
TOKEN = re.compile(r"[^\s=:|*\"'`()\[\],;<>{}]+")


def _token_keys(token: str) -> list[str]:
    """What a word of the sources matches as a value: itself without a sentence's end, and a number's digits without
    the unit after them (``30s`` gives ``30``)."""
    token = token.rstrip(".!?")
    m = re.match(r"\d+(?:[.,]\d+)*", token)
    return [token, m.group(0)] if m and m.group(0) != token else [token]


def _value_key(value: str) -> str:
    return _token_keys(plain(_unquoted(value)))[0]


def _values_beside(src: SourceText, key: str) -> set:
    """The values the sources give ``key`` (memoized): the word after the name, with only signs or small words between
    (``port = 9443``, ``Port: 9443``, ``| port | 9443 |``, ``listens on port 9443``), and those small words."""
    k = plain(_unquoted(key))
    if k not in src.memo:
        found: set = set()
        if k in src.plain:
            pattern = rf"(?<![\w.-]){re.escape(k)}(?:s|es|ing)?(?![\w-])((?:{SEP}*[^\s=:|*\"'`()\[\],;]+){{1,4}})"
            for m in re.finditer(pattern, src.plain):
                for word in TOKEN.findall(m.group(1)):
                    found.update(_token_keys(word))
                    if word.rstrip(".") not in GAP_WORDS and word not in GAP_WORDS:
                        break
        src.memo[k] = found
    return src.memo[k]


def _beside(src: SourceText, key: str, value: str) -> bool:
    """The sources give ``key`` the ``value``, not only another name (``backup_port = 8443`` is not ``port = 8443``)."""
    return _value_key(value) in _values_beside(src, key)


def _near(src: SourceText, name: str, value: str) -> bool:
    """``set X to Y``: some line or sentence of the sources holds the value and X (its words, its words run together
    as a setting's name, ``ListenAddress``, or its last word)."""
    name = plain(X_FILLER.sub("", _unquoted(name)))
    words = [w for w in name.split() if w not in ("value", "setting", "option", "parameter", "field")] or name.split()
    joined = "".join(re.split(r"[\s_-]+", name))
    for piece in src.holding(_value_key(value)):
        if _has(piece, name) or (len(words[-1]) >= 3 and _has(piece, words[-1])) or (
                len(words) > 1 and joined in "".join(re.split(r"[\s_-]+", piece))):
            return True
    return False


def _after(src: SourceText, name: str, number: str) -> bool:
    """A product's version: the number within a few words after the name (``Debian GNU/Linux 13`` for ``Debian
    13``); ``3.3`` is found in ``3.3.1``, not in ``3.31`` (memoized by name)."""
    k = ("after", name.lower())
    if k not in src.memo:
        found: set = set()
        if name.lower() in src.plain:
            for m in re.finditer(rf"(?<!\w){re.escape(name.lower())}(?!\w)((?:\W+\w[\w.]*){{1,4}})", src.plain):
                for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)*", m.group(1)):
                    parts = n.split(".")
                    found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        src.memo[k] = found
    return number.lstrip("vV") in src.memo[k]


def command_words(command: str) -> list[str]:
    """A command line's words worth looking up (its prompt and ``sudo`` left out, quotes kept off)."""
    body = PROMPT.sub("", command.strip())
    return [w.strip("'\"") for w in re.split(r"\s+", body) if any(c.isalnum() for c in w)]


def lookup(span: Span, src: SourceText) -> Span:
    """``span`` marked found or not in ``src``; a command not found whole lists the words that are not."""
    kind, text = span.kind, span.text
    if kind == "number":
        m = NUMBER.fullmatch(text) or NUMBER.search(text)
        span.found = bool(m) and _number_key(m) in src.numbers or src.holds(text)
        if not span.found and m and UNITS.get(m.group(2).lower()) == "%":
            how = computed_percent(m.group(1), src)
            if how:
                span.found, span.computed = True, f"{text} = {how}"
    elif kind == "command":
        parts = [PROMPT.sub("", p) for p in re.split(r"\s*(?:&&|\|\||;|\|)\s*", text)]  # each part's own "sudo"
        missing = []
        for part in (p for p in parts if p.strip()):
            words = command_words(part)
            # the first word is the command's name, whatever it is (a code line's as much as a listed one's)
            if src.holds(part, tight=True) and (not words or src.holds_name(words[0])):
                continue
            words = [w for i, w in enumerate(words) if not (src.holds_name(w) if i == 0 else src.holds(w, tight=True))]
            missing.extend(words or [part.strip()])
        span.missing = missing
        span.found = not missing
    elif kind == "assignment":
        span.found = _near(src, span.key, span.value)
    elif kind in ("setting", "value") and span.key:
        span.found = src.holds(text, tight=True) or _beside(src, span.key, span.value)
    elif kind == "version" and span.key:
        span.found = src.holds(text, tight=True) or _after(src, span.key, span.value)
    elif kind == "key":
        key = re.sub(r"(?i)^(?:the\s+|press(?:ing)?\s+)|\s+key$", "", text)
        span.found = src.holds(key) or src.holds(key.replace("+", "-"), tight=True) or src.holds(key.replace("-", "+"), tight=True)
    else:
        span.found = src.holds(text, tight=kind in ("path", "url", "file", "setting", "flag", "version"))
    if not span.found and not span.missing:
        span.missing = [text]
    return span


FIGURE = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])|(?<![\w.,])\d+(?:\.\d+)?(?![\w,.]\d)")


def computed_percent(shown: str, src: SourceText) -> str:
    """How a percentage the sources do not print comes from two figures set side by side on one line of theirs (a
    table row's two years, a sentence's two amounts), to the one or more decimals it is written with: a share
    (``a / b``) or a change (``(a - b) / b``, either sign); "" when none does. A whole percentage is never taken as
    computed, and figures apart on a line or on different lines are not paired: over a page of tables almost any
    percentage is the ratio of some two figures."""
    if "." not in shown:
        return ""
    try:
        target = float(shown.replace(",", ""))
    except ValueError:
        return ""
    tol = 0.5 * 10 ** -len(shown.split(".")[1]) + 1e-9
    for line in src.figure_lines():
        for (x, tx), (y, ty) in zip(line, line[1:]):
            for (a, ta), (b, tb) in (((x, tx), (y, ty)), ((y, ty), (x, tx))):
                for value, how in ((100 * a / b, f"{ta} / {tb}"), (100 * (a - b) / b, f"({ta} - {tb}) / {tb}"),
                                   (100 * (b - a) / b, f"({tb} - {ta}) / {tb}")):
                    if abs(value - target) <= tol:
                        return how
    return ""


def check(text: str, sources: list[str], in_code: bool = False) -> list[Span]:
    """``text``'s checkable spans, each looked up in ``sources`` (the texts the model read)."""
    src = sources if isinstance(sources, SourceText) else SourceText(sources)
    return [lookup(s, src) for s in spans(text, in_code)]


def unsupported(checked: list[Span]) -> list[Span]:
    return [s for s in checked if not s.found]


def not_found_words(checked: list[Span]) -> list[str]:
    """What a person is shown under an answer: each unsupported span (a command's missing words), once, in order."""
    out: list[str] = []
    for s in checked:
        for w in (s.missing if not s.found else []):
            if w not in out:
                out.append(w)
    return out


def marked(text: str, checked: list[Span], mark: str = " [?]") -> str:
    """``text`` with ``mark`` after every unsupported span (offsets as ``check`` gave them)."""
    out, at = [], 0
    for s in sorted((s for s in checked if not s.found), key=lambda s: s.start):
        end = s.end
        while end < len(text) and text[end] in "`*_\"”'":  # after the code, bold or quote that holds it
            end += 1
        out.append(text[at:end] + mark)
        at = end
    return "".join(out) + text[at:]


# --- a streamed answer, checked as it comes -------------------------------------------------------------------
SENTENCE_BREAK = re.compile(r"[.!?](?:\s*\[[\d,; ]+\])*[\"')\]]*[ \t]+(?=\S)")
_SHORT_END = re.compile(r"(?:^|\s)(?:\d{1,3}|[a-zA-Z]|e\.g|i\.e|etc|vs|cf|approx|No|Fig)\.$")


class CheckedStream:
    """A model's streamed text checked a segment at a time. Pieces are held until a line or a sentence ends; then
    that segment's spans are looked up in the sources and ``emit`` gets it with ``MARK`` after each span the sources
    do not hold. ``strict``: a sentence holding a command, flag, path, URL, file name or setting the sources do not
    hold is not emitted (it is listed in ``dropped``). ``text`` is what was kept, ``checked`` its spans (offsets in
    ``text``)."""

    MARK = " [?]"

    def __init__(self, sources, emit=None, strict: bool = False):
        self.src = sources if isinstance(sources, SourceText) else SourceText(sources)
        self.emit, self.strict = emit, strict
        self.buf, self.text, self.in_code = "", "", False
        self.checked: list[Span] = []
        self.dropped: list[dict] = []

    def feed(self, piece: str) -> None:
        self.buf += piece
        while True:
            cut = self._cut()
            if cut is None:
                return
            seg, self.buf = self.buf[:cut], self.buf[cut:]
            self._segment(seg)

    def close(self) -> "CheckedStream":
        if self.buf:
            seg, self.buf = self.buf, ""
            self._segment(seg)
        return self

    def _cut(self) -> int | None:
        i = self.buf.find("\n")
        if i >= 0:
            return i + 1
        if self.in_code or (self._line_start() and COMMAND_LINE.match(self.buf)):
            return None
        for m in SENTENCE_BREAK.finditer(self.buf):
            head = self.buf[:m.start() + 1]
            if len(head.split()) >= 3 and not _SHORT_END.search(head) and head.count("`") % 2 == 0:
                return m.end()  # a sentence's end, not inside inline code
        return None

    def _line_start(self) -> bool:
        return not self.text or self.text.endswith("\n")

    def _segment(self, seg: str) -> None:
        if FENCE.match(seg):
            self.in_code = not self.in_code
            self._keep(seg, [])
            return
        found = [lookup(s, self.src) for s in spans(seg, self.in_code, line_start=self._line_start())]
        bad = [s for s in found if not s.found and s.kind in DANGEROUS]
        if self.strict and bad and seg.strip():
            self.dropped.append({"text": seg.strip(), "missing": not_found_words(bad)})
            if seg.endswith("\n") and self.text and not self.text.endswith("\n"):
                self._keep("\n", [])
            return
        self._keep(seg, found)

    def _keep(self, seg: str, found: list[Span]) -> None:
        for s in found:
            s.start += len(self.text)
            s.end += len(self.text)
        self.text += seg
        self.checked.extend(found)
        if self.emit:
            shift = len(self.text) - len(seg)
            self.emit(marked(seg, [Span(s.text, s.kind, s.start - shift, s.end - shift, s.found) for s in found],
                             self.MARK))


def citations_hold(text: str, texts_by_n: dict) -> dict:
    """Citation precision: of the answer's sentences that cite sources ``[n]`` and hold checkable spans, how many
    cite sources holding every such span (``texts_by_n``: source number -> the text the model read as it)."""
    from .answer import NUM_RE, _marker_numbers, sentences

    total = held = 0
    for sent in sentences(text):
        nums = [n for m in NUM_RE.finditer(sent) for n in _marker_numbers(m)]
        found = spans(NUM_RE.sub(" ", sent))
        if not nums or not found:
            continue
        src = SourceText([texts_by_n[n] for n in nums if n in texts_by_n])
        total += 1
        held += all(lookup(s, src).found for s in found)
    return {"sentences": total, "held": held}
