"""EPUB loader: a book's chapters in spine order, each read as the HTML page it is (``html.py``).

An EPUB is a zip: ``META-INF/container.xml`` names the package file (OPF), whose manifest maps ids to files and
whose spine lists the reading order. Each spine item (XHTML) becomes blocks with its own h1-h6 heading paths, under
the book's title; items the spine marks ``linear="no"`` (pop-ups, notes) are read after the rest, as a reader
reaches them. A spine item the zip lacks is a warning and the rest is read; a book with DRM (an ``encryption.xml``
over its chapters) or no package file is one line. Read with the standard library (zipfile, ElementTree), so no
package is needed; entries are size-checked before they are unpacked (``zip_guard``).
"""
from __future__ import annotations

import posixpath
import zipfile
import zlib
from pathlib import Path
from urllib.parse import unquote
from xml.etree import ElementTree

from ..errors import IngestError
from ..records import Block, LoadedDocument
from .html import HEAD_CHARS, PAGE_SUFFIXES, _decode, file_under, pages_above, parse_html
from .zips import zip_guard

_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container", "opf": "http://www.idpf.org/2007/opf",
       "dc": "http://purl.org/dc/elements/1.1/"}
_PAGES = ("application/xhtml+xml", "text/html", "application/xml", "text/xml")


def load_epub(p: Path) -> LoadedDocument:
    if not zipfile.is_zipfile(p):
        raise IngestError(p, "not an EPUB (not a zip container; corrupt or misnamed file)")
    with zipfile.ZipFile(p) as zf:
        zip_guard(p, zf)
        names = set(zf.namelist())
        if "META-INF/encryption.xml" in names and _encrypted_pages(zf):
            raise IngestError(p, "encrypted EPUB (DRM): its chapters cannot be read")
        opf_path = _package_path(p, zf, names)
        try:
            opf = ElementTree.fromstring(zf.read(opf_path))
        except ElementTree.ParseError as exc:
            raise IngestError(p, f"not an EPUB (its package file {opf_path} is not XML: {exc})") from None
        title = " ".join((opf.findtext(".//dc:title", default="", namespaces=_NS) or "").split())
        base = posixpath.dirname(opf_path)
        manifest = {i.get("id"): i for i in opf.iterfind(".//opf:manifest/opf:item", _NS)}
        refs = list(opf.iterfind(".//opf:spine/opf:itemref", _NS))
        order = [r for r in refs if r.get("linear") != "no"] + [r for r in refs if r.get("linear") == "no"]
        blocks: list[Block] = []
        warnings: list[str] = []
        heads: dict = {}  # the pages rel="up" links name, read once for the whole book
        for ref in order:
            item = manifest.get(ref.get("idref"))
            if item is None or item.get("media-type", "") not in _PAGES:
                if item is None:
                    warnings.append(f"spine item {ref.get('idref')!r} is not in the manifest: skipped")
                continue
            name = posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
            if name not in names:
                warnings.append(f"spine item {name} is missing from the book: skipped")
                continue
            try:
                text, enc, _ = _decode(p, zf.read(name))
            except IngestError:
                warnings.append(f"spine item {name} is not text: skipped")
                continue
            chapter = parse_html(text, f"{p}#{name}", encoding=enc).blocks
            file_under(chapter, pages_above(text, name, _chapter_reader(zf, names, name, heads)))
            for b in chapter:
                path = (title,) + b.heading_path if title and b.heading_path[:1] != (title,) else b.heading_path
                blocks.append(Block(text=b.text, heading_path=path, is_heading=b.is_heading))
    if title and blocks:
        blocks.insert(0, Block(text=title, heading_path=(title,), is_heading=True))
    return LoadedDocument(path=str(p), kind="epub", blocks=blocks, warnings=warnings)


def _chapter_reader(zf: zipfile.ZipFile, names: set, chapter: str, heads: dict):
    """``pages_above``'s reader for a chapter: the book's other pages (.html, .htm, .xhtml) by a link relative to the
    chapter, the head of their first 200,000 bytes (where the title and links are), kept in ``heads`` for the next
    chapter that names them; a member that will not unpack is no page."""
    def read(href: str) -> tuple[str, str] | None:
        name = posixpath.normpath(posixpath.join(posixpath.dirname(chapter), unquote(href)))
        if name not in names or not name.lower().endswith(PAGE_SUFFIXES):
            return None
        if name not in heads:
            try:
                with zf.open(name) as f:
                    heads[name] = _decode(Path(name), f.read(200_000))[0][:HEAD_CHARS]
            except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, OSError, IngestError):
                heads[name] = None
        return None if heads[name] is None else (name, heads[name])

    return read


def _package_path(p: Path, zf: zipfile.ZipFile, names: set) -> str:
    """The OPF file's name inside the zip, from META-INF/container.xml (else the only .opf file there is)."""
    if "META-INF/container.xml" in names:
        try:
            root = ElementTree.fromstring(zf.read("META-INF/container.xml"))
            full = root.find(".//c:rootfile", _NS)
            if full is not None and full.get("full-path") in names:
                return full.get("full-path")
        except ElementTree.ParseError:
            pass
    opfs = [n for n in names if n.lower().endswith(".opf")]
    if len(opfs) == 1:
        return opfs[0]
    raise IngestError(p, "not an EPUB (no package file: META-INF/container.xml names none)")


def _encrypted_pages(zf: zipfile.ZipFile) -> bool:
    """Whether encryption.xml covers anything but fonts (font obfuscation leaves the text readable)."""
    try:
        root = ElementTree.fromstring(zf.read("META-INF/encryption.xml"))
    except ElementTree.ParseError:
        return True
    uris = [el.get("URI", "") for el in root.iter() if el.tag.endswith("CipherReference")]
    return any(not u.lower().endswith((".ttf", ".otf", ".woff", ".woff2")) for u in uris)
