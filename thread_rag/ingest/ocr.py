"""OCR of pages with no text layer (a scanned PDF page, an image of a page), by the PP-OCRv4 models that ship inside
the ``rapidocr-onnxruntime`` package (ONNX, run by onnxruntime on the CPU; nothing is downloaded).

``read_image(image)`` gives the page's lines in reading order (a page in two columns column by column), the boxes
the detector found on one line joined left to right, "" where a vertical gap parts two paragraphs, and the spaces
the recogniser runs together put back; ``respace`` then joins the pieces of a word read apart and parts words
still run together, from the pages' own spelling and an English word list. The model
files are checked against the package's RECORD before the first page (``model_check.verify``). A page is rendered
for it at 144 dpi (``render_pdf_page``): on 2 AVX2 cores about 7 s a page, 1.3% of characters wrong on the median
page of ten rendered pages of the Debian guide (issue 44, ``bench_results/ocr-debian.json``).
"""
from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from ..errors import IngestError

RENDER_SCALE = 2.0  # 72 dpi x 2: measured against 1.5 and 3 on the Debian guide (ocr-debian.json)
PACKAGE = "rapidocr_onnxruntime"
MODEL_FILES = ("models/ch_PP-OCRv4_det_infer.onnx", "models/ch_PP-OCRv4_rec_infer.onnx",
               "models/ch_ppocr_mobile_v2.0_cls_infer.onnx")

_WIDE = frozenset("mwMW")
_SECTION_LINE = re.compile(r"^\d+(?:\.\d+)+\.?\s*[A-Z]")  # "4.3.1 Preparing a USB stick", not "1. Insert"
_engine = None
_lock = threading.Lock()


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec(PACKAGE) is not None


def _ocr_engine():
    """The packaged OCR models, loaded once per process after their files are checked."""
    global _engine
    with _lock:
        if _engine is None:
            if not available():
                raise IngestError("", "OCR is not installed (pip install rapidocr-onnxruntime, as requirements.txt "
                                      "pins it)")
            import importlib.util

            from ..model_check import verify

            root = Path(importlib.util.find_spec(PACKAGE).origin).parent
            for name in MODEL_FILES:
                verify((root / name).resolve())
            from rapidocr_onnxruntime import RapidOCR

            _engine = RapidOCR()
        return _engine


def read_image(image) -> list[str]:
    """Lines of one page image (a numpy array or PIL image, RGB), top to bottom; "" between paragraphs."""
    import numpy as np

    engine = _ocr_engine()
    img, _, _ = engine.preprocess(np.asarray(image))
    boxes, _ = engine.auto_text_det(img)
    if boxes is None or len(boxes) == 0:
        return []
    recognised, _ = engine.text_rec(engine.get_crop_img_list(img, boxes), return_word_box=True)
    cut = []  # (x0, x1, y0, y1, info): boxes the detector ran across a column gutter split where the model saw it
    for box, (_, score, info) in zip(boxes, recognised):
        if score < engine.text_score:
            continue
        xs, ys = [pt[0] for pt in box], [pt[1] for pt in box]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        for piece, start, end in pieces(info):
            cut.append((x0 + (x1 - x0) * start, x0 + (x1 - x0) * end, y0, y1, piece))
    gutter = _gutter([_Box((y0 + y1) / 2, y1 - y0, x0, x1, y0, y1, "") for x0, x1, y0, y1, _ in cut])
    if gutter is not None:  # and those that still cross the gutter, at the word gap nearest it
        width = max(x1 for _, x1, _, _, _ in cut) - min(x0 for x0, _, _, _, _ in cut)
        cut = [part for c in cut for part in _split_at(c, gutter, 0.03 * width)]
    return page_lines([([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], spaced(info), 1.0) for x0, x1, y0, y1, info in cut])


def _split_at(box: tuple, gutter: float, reach: float) -> list[tuple]:
    """``box`` (x0, x1, y0, y1, info) cut into two at the gap between words nearest ``gutter``, when it crosses the
    gutter and such a gap lies within ``reach`` of it; else the box as it is."""
    x0, x1, y0, y1, info = box
    n, words, cols, _, _ = info
    if not x0 < gutter < x1 or len(words) < 2:
        return [box]
    at = lambda col: x0 + (x1 - x0) * (col + 0.5) / max(float(n), 1.0)  # noqa: E731 - a column's x on the page
    gaps = [(abs((at(cols[i][-1]) + at(cols[i + 1][0])) / 2 - gutter), i) for i in range(len(words) - 1)
            if cols[i] and cols[i + 1]]
    if not gaps or min(gaps)[0] > reach:
        return [box]
    i = min(gaps)[1] + 1
    mid = (at(cols[i - 1][-1]) + at(cols[i][0])) / 2
    return [(x0, mid, y0, y1, [n, words[:i], cols[:i], [], []]), (mid, x1, y0, y1, [n, words[i:], cols[i:], [], []])]


def pieces(info) -> list[tuple[list, float, float]]:
    """A recognised line cut where two characters stand 4 times the line's usual step apart (and at least 10
    columns), or where the model read two spaces in a row over twice its usual step: the detector ran the lines of
    two columns into one box. Each piece: (its ``info``, where it starts and
    ends as shares of the box's width)."""
    n, words, cols, _, _ = info
    chars = [(c, col, w) for w, (ws, cs) in enumerate(zip(words, cols)) for c, col in zip(ws, cs)]
    if not chars:
        return [(info, 0.0, 1.0)]
    steps = sorted(b[1] - a[1] for a, b in zip(chars, chars[1:]))
    step = steps[len(steps) // 2] if steps else 1
    cut = max(10.0, 4 * step) if steps else float("inf")
    runs, run = [], [chars[0]]
    for a, b in zip(chars, chars[1:]):
        if b[1] - a[1] >= cut or (a[0] == " " and b[2] != a[2] and b[1] - a[1] >= 2 * step):  # or a double space
            runs.append(run)
            run = []
        run.append(b)
    runs.append(run)
    if len(runs) == 1:
        return [(info, 0.0, 1.0)]
    out = []
    for r in runs:
        ws, cs, last = [], [], None
        for c, col, w in r:
            if not ws or w != last:
                ws.append([])
                cs.append([])
            ws[-1].append(c)
            cs[-1].append(col)
            last = w
        width = max(float(n), 1.0)
        out.append(([n, ws, cs, [], []], max(0.0, (r[0][1] - 1) / width), min(1.0, (r[-1][1] + 2) / width)))
    return out


def spaced(info) -> str:
    """A recognised line with the spaces the model left out put back. The packaged PP-OCRv4 recogniser (trained
    for Chinese and English) runs English words together ("Theproceduresdescribed"); its decoder says at which
    column of the line each character was read, and a gap between two characters of 1.75 times the line's usual
    step (and at least 4 columns; a column more for each wide letter of the two) is the space between two words.
    On a blurred or JPEG scan the columns are too coarse to tell every space (ocr-debian.json).
    ``info``: [columns, words, columns of each word's characters, states, confidences]."""
    _, words, cols, _, _ = info
    steps = sorted(b - a for w in cols for a, b in zip(w, w[1:]))
    if not steps:
        return " ".join("".join(w) for w in words)
    gap = max(4.0, 1.75 * steps[len(steps) // 2])
    out = []
    for chars, where in zip(words, cols):
        word = chars[0] if chars else ""
        for prev, ch, a, b in zip(chars, chars[1:], where, where[1:]):
            wide = sum(c in _WIDE or c.isupper() for c in (prev, ch))  # wide letters stand further apart
            word += (" " if b - a >= gap + wide else "") + ch
        out.append(word)
    return " ".join(out)


def page_lines(result: list) -> list[str]:
    """RapidOCR's boxes ([corner points, text, score]) as lines in reading order. A page set in two columns (a gutter
    most boxes leave free, with a quarter of them or more on each side) is read column by column, a wide box
    spanning the gutter (a title across both) closing the band above it. Within a column, boxes whose vertical
    middles lie within half a line's height of each other are one line, left to right; a gap of more than 0.8 line
    heights between lines parts paragraphs (""), and a line set 1.2 times taller than the page's usual line, or a
    dotted section number's line that stops short of the right margin (a heading), is a paragraph of its own."""
    boxes = []
    for points, text, _score in result:
        ys, xs = [pt[1] for pt in points], [pt[0] for pt in points]
        if text.strip():
            boxes.append(_Box((min(ys) + max(ys)) / 2, max(ys) - min(ys), min(xs), max(xs), min(ys), max(ys),
                              text.strip()))
    gutter = _gutter(boxes)
    if gutter is None:
        return _lines(boxes)
    out: list[str] = []
    band: list = []
    wide = 0.3 * (max(b.x1 for b in boxes) - min(b.x0 for b in boxes))  # narrower boxes over the gutter: a side's

    def flush() -> None:
        left = [b for b in band if (b.x0 + b.x1) / 2 < gutter]
        for side in (left, [b for b in band if (b.x0 + b.x1) / 2 >= gutter]):
            if side:
                if out and out[-1]:
                    out.append("")
                out.extend(_lines(side))
        band.clear()

    for b in sorted(boxes, key=lambda b: b.top):
        if b.x0 < gutter < b.x1 and b.x1 - b.x0 > wide:  # across both columns (a title)
            flush()
            if out and out[-1]:
                out.append("")
            out.append(b.text)
        else:
            band.append(b)
    flush()
    return out


class _Box(NamedTuple):
    mid: float
    height: float
    x0: float
    x1: float
    top: float
    bottom: float
    text: str


def _gutter(boxes: list) -> float | None:
    """The x of a gutter between two columns: in the middle half of the page, the place fewest boxes cross (at most
    one in ten), with a quarter of the boxes or more wholly on each side; None for a page in one column."""
    if len(boxes) < 8:
        return None
    left, right = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    best = None
    for i in range(25, 76):
        x = left + (right - left) * i / 100
        crossing = sum(b.x0 < x < b.x1 for b in boxes)
        before, after = sum(b.x1 <= x for b in boxes), sum(b.x0 >= x for b in boxes)
        if crossing <= len(boxes) / 10 and min(before, after) >= len(boxes) / 4:
            if best is None or crossing < best[0]:
                best = (crossing, x)
    return None if best is None else best[1]


def _lines(boxes: list) -> list[str]:
    boxes = sorted(boxes)
    lines: list[list] = []
    for b in boxes:
        if lines and abs(b.mid - lines[-1][0].mid) < 0.5 * max(b.height, lines[-1][0].height):
            lines[-1].append(b)
        else:
            lines.append([b])
    out: list[str] = []
    last_bottom, last_tall = None, False
    usual = sorted(max(b.height for b in line) for line in lines)[len(lines) // 2] if lines else 0
    right = max((b.x1 for line in lines for b in line), default=0)
    left = min((b.x0 for line in lines for b in line), default=0)
    for line in lines:
        top, bottom = min(b.top for b in line), max(b.bottom for b in line)
        height = max(b.height for b in line)
        text = " ".join(b.text for b in sorted(line, key=lambda b: b.x0))
        short = max(b.x1 for b in line) < left + 0.85 * (right - left)
        # set larger than the text around it, or a numbered section title that stops short: a paragraph of its own
        tall = height >= 1.2 * usual or (short and bool(_SECTION_LINE.match(text)))
        if out and out[-1] and (tall or last_tall or (last_bottom is not None and top - last_bottom > 0.8 * height)):
            out.append("")
        out.append(text)
        last_bottom, last_tall = bottom, tall
    return out


def render_pdf_page(path: Path, index: int, scale: float = RENDER_SCALE):
    """Page ``index`` (from 0) of a PDF as an RGB image (pypdfium2)."""
    import pypdfium2 as pdfium

    from ..pdfium_lock import PDFIUM

    with PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        try:
            return pdf[index].render(scale=scale).to_pil().convert("RGB")
        finally:
            pdf.close()


def load_image(path: Path):
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.load()
            if im.width * im.height > 80_000_000:
                raise IngestError(path, f"image too large to read ({im.width}x{im.height} pixels)")
            return im.convert("RGB")
    except UnidentifiedImageError:
        raise IngestError(path, "not an image this reader knows (corrupt or misnamed file)") from None


_LEXICON: dict | None = None
_RUN = re.compile(r"[A-Za-z]{8,}")
_PATHLIKE = frozenset("/\\._-=:~$@%{}<>[]\"'`")


def _lexicon() -> dict:
    """English words with a cost that grows with their rarity: the whole words of the packaged MiniLM's vocabulary
    (word-piece vocabularies list words roughly by frequency), "a" added."""
    global _LEXICON
    if _LEXICON is None:
        import json
        import math

        from ..embedder import packaged_minilm_path

        vocab = json.loads((packaged_minilm_path() / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
        first = min(i for w, i in vocab.items() if w == "the")
        _LEXICON = {w: math.log(i - first + 2) for w, i in vocab.items()
                    if i >= first and w.isascii() and w.isalpha() and not w.startswith("##")}
        _LEXICON["a"] = 1.0  # "I" is left out: inside run-together lower-case text it is mostly a misread
    return _LEXICON


def respace(pages: list[list[str]], keep=None) -> list[list[str]]:
    """Words the recogniser parted or ran together, put right from these pages' own spelling. First, pieces of one
    word printed apart ("M emory", "Firm ware", "Installat io n") are joined where the joined word is printed whole
    on these pages more often than each piece stands alone ("in to" stays: "in" is commoner than "into"). Then runs
    ``spaced`` could not part ("thestickisunmounted") are split the cheapest way into known words: English words
    (``_lexicon``) and the words these pages print at least twice ("Debian", "netinst"), unless such a word is a
    phrase (``_own_lexicon``: "YourSystem", a run-together title the contents repeat). Only runs of 8 letters or
    more that are no known word themselves are split (a name the pages print twice, "VirtualBox", is a word), and
    only into pieces of 3.5 letters on average with no unknown piece, and never a run inside a path, file name,
    option, variable or quotes ("/boot/newinstall/", "AutoAddDevices"); the letters and their case stay as read.
    Lines ``keep`` says yes to (a command line) are left as read."""
    as_read = (lambda line: False) if keep is None else keep
    printed = Counter(_words(pages))
    pages = [[ln if as_read(ln) else _rejoin(ln, printed) for ln in lines] for lines in pages]
    words = _words(pages)  # as the pages read once pieces are joined
    lexicon = _own_lexicon(Counter(words), " " + " ".join(words) + " ")

    def split(m) -> str:
        run, text = m.group(0), m.string
        low = run.lower()
        if low in lexicon or text[m.start() - 1:m.start()] in _PATHLIKE or text[m.end():m.end() + 1] in _PATHLIKE:
            return run  # a word, or part of a path, a file name, an option, a variable or a quoted name: as read
        parts = _segment(low, lexicon)
        if not parts or len(low) / len(parts) < 3.5:
            return run
        out, at = [], 0
        for p in parts:
            out.append(run[at:at + len(p)])
            at += len(p)
        return " ".join(out)

    return [[ln if as_read(ln) else _RUN.sub(split, ln) for ln in lines] for lines in pages]


def _words(pages: list[list[str]]) -> list[str]:
    """The words (letters only, lower case) these pages print, in order."""
    return re.findall(r"[a-z]+", "\n".join(ln for lines in pages for ln in lines).lower())


def _rejoin(line: str, own: dict) -> str:
    """``line`` with each run of 2 to 4 letter-only pieces joined where the joined word is printed whole more often
    than each of its pieces stands alone (``own``: how often each word is printed on these pages; a lone letter other
    than "a" or "I" is no word and is not counted: "M emory" is joined however often an "M" stands alone), longest
    first; a run's first piece may open with a bracket or quote and its last close with one or with punctuation."""
    words = line.split(" ")
    out, i = [], 0
    while i < len(words):
        for n in (4, 3, 2):
            group = words[i:i + n]
            if len(group) < n:
                continue
            head, core, tail = _core(group)
            if all(w.isascii() and w.isalpha() for w in core) and (all(w[0].islower() for w in core[1:])
                                                                   or all(w.isupper() for w in core)):
                whole = own.get("".join(core).lower(), 0)
                if whole >= 2 and all(own.get(w.lower(), 0) < whole for w in core if len(w) > 1 or w in "aAI"):
                    out.append(head + "".join(core) + tail)
                    i += n
                    break
        else:
            out.append(words[i])
            i += 1
    return " ".join(out)


def _core(group: list[str]) -> tuple[str, list[str], str]:
    """A run of pieces as (what opens it, its pieces, what closes it): '("M', 'emory").' -> '("', [M, emory], '").'"""
    first, last = group[0], group[-1]
    head = first[:len(first) - len(first.lstrip("(\"'[<"))]
    tail = last[len(last.rstrip(".,;:!?)\"']>")):]
    core = list(group)
    core[0] = core[0][len(head):]
    core[-1] = core[-1][:len(core[-1]) - len(tail)] if tail else core[-1]
    return head, core, tail


_GLUE = frozenset("the this that to your you see for of and are will with from note".split())


def _own_lexicon(own: dict, words: str) -> dict:
    """English words (``_lexicon``) and the words these pages print at least twice (``own``), the latter cheap. A
    recurring run of 8 letters or more is a phrase the recogniser ran together ("theinstallation", "seesection"), not
    a word ("installer", "bootable", "preconfiguration"), and stays out, when its cheapest split holds a short function
    word ("the", "to", "see"), or is printed apart more often than the run is printed together (``words``:
    the pages' words, lower case, one space apart), or, over 12 letters, the run is printed fewer than 5 times. Runs
    are decided shortest first, so that a split can use them."""
    lexicon = dict(_lexicon())
    for w, n in own.items():
        if n >= 2 and len(w) >= 3:
            if w in lexicon:
                lexicon[w] = min(lexicon[w], 4.0)
            elif len(w) < 8:
                lexicon[w] = 4.0
    for w in sorted((w for w, n in own.items() if n >= 2 and len(w) >= 8 and w not in lexicon), key=len):
        parts = _segment(w, lexicon)
        if not parts or len(parts) == 1:
            lexicon[w] = 4.0
        elif not (_GLUE & set(parts) or words.count(" " + " ".join(parts) + " ") > own[w]
                  or (len(w) > 12 and own[w] < 5)):
            lexicon[w] = 4.0
    return lexicon


def _segment(text: str, lexicon: dict) -> list[str] | None:
    """The cheapest split of ``text`` into lexicon words (None when there is none)."""
    import math

    best, back = [0.0] + [math.inf] * len(text), [0] * (len(text) + 1)
    for j in range(1, len(text) + 1):
        for i in range(max(0, j - 24), j):
            c = lexicon.get(text[i:j])
            if c is not None and best[i] + c < best[j]:
                best[j], back[j] = best[i] + c, i
    if best[-1] == math.inf:
        return None
    parts, j = [], len(text)
    while j > 0:
        parts.append(text[back[j]:j])
        j = back[j]
    return parts[::-1]
