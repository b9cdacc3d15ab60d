"""OCR of pages with no text layer (a scanned PDF page, an image of a page), by the PP-OCRv4 models that ship inside
the ``rapidocr-onnxruntime`` package (ONNX, run by onnxruntime on the CPU; nothing is downloaded).

``PageReader.read(image)`` gives the page's lines top to bottom, the boxes the detector found on one line joined left
to right, and "" where a vertical gap parts two paragraphs. The model files are checked against the package's RECORD
before the first page (``model_check.verify``). A page is rendered for it at 144 dpi (``render_pdf_page``): on
2 AVX2 cores about 6 s a page, character error rate 2.5% on three rendered pages of the Debian guide (issue 44,
``bench_results/ocr-debian.json``).
"""
from __future__ import annotations

import threading
from pathlib import Path

from ..errors import IngestError

RENDER_SCALE = 2.0  # 72 dpi x 2: measured against 1.5 and 3 on the Debian guide (ocr-debian.json)
PACKAGE = "rapidocr_onnxruntime"
MODEL_FILES = ("models/ch_PP-OCRv4_det_infer.onnx", "models/ch_PP-OCRv4_rec_infer.onnx",
               "models/ch_ppocr_mobile_v2.0_cls_infer.onnx")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")

_WIDE = frozenset("mwMW")
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
    result = [(box.tolist(), spaced(info), score) for box, (_, score, info) in zip(boxes, recognised)
              if score >= engine.text_score]
    return page_lines(result)


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
    """RapidOCR's boxes ([corner points, text, score]) as lines: boxes whose vertical middles lie within half a
    line's height of each other are one line, left to right; a gap of more than 0.8 line heights between lines
    parts paragraphs."""
    boxes = []
    for points, text, _score in result:
        ys, xs = [pt[1] for pt in points], [pt[0] for pt in points]
        if text.strip():
            boxes.append(((min(ys) + max(ys)) / 2, max(ys) - min(ys), min(xs), text.strip(), min(ys), max(ys)))
    boxes.sort()
    lines: list[list] = []
    for b in boxes:
        if lines and abs(b[0] - lines[-1][0][0]) < 0.5 * max(b[1], lines[-1][0][1]):
            lines[-1].append(b)
        else:
            lines.append([b])
    out: list[str] = []
    last_bottom = None
    for line in lines:
        top, bottom = min(b[4] for b in line), max(b[5] for b in line)
        height = max(b[1] for b in line)
        if last_bottom is not None and top - last_bottom > 0.8 * height and out and out[-1]:
            out.append("")
        out.append(" ".join(b[3] for b in sorted(line, key=lambda b: b[2])))
        last_bottom = bottom
    return out


def render_pdf_page(path: Path, index: int, scale: float = RENDER_SCALE):
    """Page ``index`` (from 0) of a PDF as an RGB image (pypdfium2)."""
    import pypdfium2 as pdfium

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
