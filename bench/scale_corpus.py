"""Real text for ``bench scale``: the shared sets, Debian documentation packages fetched with ``apt-get
download`` at run time, Python's own reference topics, and (only as filler) the standard library's sources.

Every source yields :class:`SourceDoc` (a key, a title, markdown or not, and a reader that returns the text
when it is indexed, so nothing is held in memory beforehand).
"""
from __future__ import annotations

import gzip
import html
import random
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable

# package -> (files inside the unpacked package, how to read them); say which in the results
DEBIAN_PACKAGES = {
    "python3.11-doc": ("usr/share/doc/python3.11/html/_sources/**/*.rst.txt", "text"),
    "linux-doc-6.1": ("usr/share/doc/linux-doc-6.1/Documentation/**/*.rst.gz", "gzip"),
    "postgresql-doc-15": ("usr/share/doc/postgresql-doc-15/html/*.html", "html"),
    "perl-doc": ("usr/share/perl/**/*.pod", "text"),
    "python-django-doc": ("usr/share/doc/python-django-doc/html/**/*.html", "html"),
    "git-doc": ("usr/share/doc/git-doc/*.txt", "text"),
    "debian-reference-en": ("usr/share/debian-reference/debian-reference.en.txt.gz", "gzip"),
    "debian-handbook": ("usr/share/doc/debian-handbook/html/en-US/*.html", "html"),
}


@dataclass
class SourceDoc:
    source: str
    key: str
    title: str
    markdown: bool
    read: Callable[[], str]


class _HtmlText(HTMLParser):
    """HTML to Markdown-ish text: headings become ``#`` lines, blocks become paragraphs, scripts go."""

    SKIP = {"script", "style", "head", "nav"}
    BLOCK = {"p", "div", "li", "pre", "tr", "br", "dt", "dd", "table", "section", "blockquote"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
            self.out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self.BLOCK:
            self.out.append("\n\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif (len(tag) == 2 and tag[0] == "h" and tag[1].isdigit()) or tag in self.BLOCK:
            self.out.append("\n\n")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data if data.strip() else " ")


def html_to_text(raw: str) -> str:
    p = _HtmlText()
    p.feed(raw)
    lines = (" ".join(line.split()) for line in html.unescape("".join(p.out)).split("\n"))
    text, blank = [], False
    for line in lines:
        if line or not blank:
            text.append(line)
        blank = not line
    return "\n".join(text).strip()


def _reader(path: Path, how: str) -> Callable[[], str]:
    def read() -> str:
        if how == "gzip":
            return gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        raw = path.read_text(encoding="utf-8", errors="replace")
        return html_to_text(raw) if how == "html" else raw
    return read


def debian_packages(cache: Path, packages: list[str] | None = None) -> tuple[list[SourceDoc], dict]:
    """Documents of the Debian packages (downloaded once into ``cache``); and what was fetched or why not."""
    names = packages or list(DEBIAN_PACKAGES)
    cache.mkdir(parents=True, exist_ok=True)
    report: dict = {}
    docs: list[SourceDoc] = []
    for name in names:
        root = cache / name
        if not (root / ".unpacked").is_file():
            err = _fetch(name, cache, root)
            if err:
                report[name] = {"error": err}
                continue
        pattern, how = DEBIAN_PACKAGES[name]
        files = sorted(root.glob(pattern))
        version = (root / ".version").read_text().strip() if (root / ".version").is_file() else ""
        report[name] = {"version": version, "files": len(files)}
        for f in files:
            rel = str(f.relative_to(root))
            docs.append(SourceDoc(name, f"debian/{name}/{rel}", f.name, how == "html", _reader(f, how)))
    return docs, report


def _fetch(name: str, cache: Path, root: Path) -> str | None:
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        return "apt-get/dpkg not found"
    try:
        for d in cache.glob(f"{name}_*.deb"):
            d.unlink()
        subprocess.run(["apt-get", "download", name], cwd=cache, check=True, capture_output=True, timeout=600)
        deb = sorted(cache.glob(f"{name}_*.deb"))[-1]
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True, capture_output=True, timeout=600)
        (root / ".version").write_text(deb.name.split("_")[1])
        (root / ".unpacked").write_text("ok")
        deb.unlink()
        return None
    except (subprocess.SubprocessError, OSError, IndexError) as exc:
        return f"{exc.__class__.__name__}: {str(exc)[:200]}"


def shared_sets(data: Path) -> list[SourceDoc]:
    """The shared data sets' corpora (those present) and the two Debian installation guides (TXT)."""
    from .datasets import load_dataset

    docs: list[SourceDoc] = []
    for name in ("aws-docs-qa", "musique", "leval-legal", "limit-small"):
        try:
            ds = load_dataset(name, data)
        except (OSError, ValueError, KeyError):
            continue
        for d in ds.corpus:
            docs.append(SourceDoc(name, f"{name}/{d.key}", d.title or d.key, d.kind == "markdown",
                                  lambda t=d.text: t))
    for ed in ("amd64", "arm64"):
        f = data / f"docs-debian-procedural/installation-guide-{ed}-en/install.en.txt"
        if f.is_file():
            docs.append(SourceDoc("debian-install-guide", f"install-guide/{ed}", f.name, False, _reader(f, "text")))
    return docs


def python_topics() -> dict[str, str]:
    import pydoc_data.topics

    return dict(sorted(pydoc_data.topics.topics.items()))


def held_out_document(words: int = 9000) -> tuple[str, str]:
    """A real ~100-chunk document kept out of the library: Python's reference topics, taken in name order
    until ``words`` words (the library gets the other topics)."""
    parts, n = [], 0
    for name, text in python_topics().items():
        if n >= words:
            break
        parts.append(f"# {name}\n\n{text}")
        n += len(text.split())
    return "python-reference-topics (held out)", "\n\n".join(parts)


def always_available(held_out_names: set[str]) -> list[SourceDoc]:
    """Python's reference topics not held out, and this repository's manual."""
    docs = [SourceDoc("python-topics", f"pydoc/{name}", name, False, lambda t=text: t)
            for name, text in python_topics().items() if name not in held_out_names]
    repo_docs = Path(__file__).resolve().parents[1] / "docs"
    docs += [SourceDoc("thread-rag-docs", f"docs/{f.name}", f.name, True, _reader(f, "text"))
             for f in sorted(repo_docs.glob("*.md"))]
    return docs


def stdlib_filler() -> list[SourceDoc]:
    """The standard library's Python sources, in path order: used only after every other source."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts and "site-packages" not in p.parts)
    return [SourceDoc("python-stdlib", f"stdlib/{f.relative_to(root)}", f.name, False, _reader(f, "text"))
            for f in files]


def scale_corpus(data: Path | None, cache: Path, download: bool, seed: int = 13) -> tuple[list[SourceDoc], dict]:
    """Every source's documents shuffled together (so each growth step has the same mix), then the filler."""
    held = held_out_document()
    held_names = {line[2:] for line in held[1].splitlines() if line.startswith("# ")}
    docs = always_available(held_names)
    report: dict = {"python_version": sys.version.split()[0]}
    if data is not None and data.is_dir():
        docs += shared_sets(data)
    if download:
        deb, report["debian_packages"] = debian_packages(cache)
        docs += deb
    random.Random(seed).shuffle(docs)
    return docs + stdlib_filler(), report
