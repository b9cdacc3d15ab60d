"""Word equations (Office Math, OMML) as LaTeX: ``latex(oMath element)``.

A DOCX stores an equation as ``m:oMath`` (inline) or ``m:oMathPara`` (on a line of its own) holding structures
(fraction ``m:f``, script ``m:sSup``, radical ``m:rad``, n-ary ``m:nary``, delimiter ``m:d``, function ``m:func``,
accent, bar, matrix, equation array, limits) over runs of text ``m:r``/``m:t``. Each structure is written as the
LaTeX a reader (and the model) knows; its text's symbols as LaTeX commands (π -> \\pi). An element this reader does
not know is read for its text."""
from __future__ import annotations

M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
OMATH, OMATH_PARA = M + "oMath", M + "oMathPara"
W_INS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}ins"

SYMBOLS = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon", "ζ": r"\zeta", "η": r"\eta",
    "θ": r"\theta", "ι": r"\iota", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi",
    "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "υ": r"\upsilon", "φ": r"\phi", "χ": r"\chi",
    "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi",
    "Π": r"\Pi", "Σ": r"\Sigma", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega",
    "±": r"\pm", "∓": r"\mp", "×": r"\times", "÷": r"\div", "·": r"\cdot", "∙": r"\cdot", "∞": r"\infty",
    "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "≡": r"\equiv", "∝": r"\propto", "→": r"\to",
    "←": r"\leftarrow", "⇒": r"\Rightarrow", "⇔": r"\Leftrightarrow", "∂": r"\partial", "∇": r"\nabla",
    "∈": r"\in", "∉": r"\notin", "⊂": r"\subset", "⊆": r"\subseteq", "∪": r"\cup", "∩": r"\cap", "∀": r"\forall",
    "∃": r"\exists", "…": r"\ldots", "⋯": r"\cdots", "°": r"^{\circ}", "−": "-", "–": "-", "∗": "*",
}
NARY = {"∑": r"\sum", "∏": r"\prod", "∐": r"\coprod", "∫": r"\int", "∬": r"\iint", "∭": r"\iiint", "∮": r"\oint",
        "⋃": r"\bigcup", "⋂": r"\bigcap"}
ACCENTS = {"\u0302": r"\hat", "\u0303": r"\tilde", "\u0304": r"\bar", "\u0305": r"\bar", "\u0307": r"\dot",
           "\u0308": r"\ddot", "\u20d7": r"\vec", "\u030c": r"\check"}
FUNCTIONS = {"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "log",
             "ln", "lg", "exp", "lim", "max", "min", "sup", "inf", "det", "deg", "gcd", "arg", "dim", "ker", "Pr"}
DELIMITERS = {"{": r"\{", "}": r"\}", "": ".", "〈": r"\langle", "〉": r"\rangle", "⟨": r"\langle", "⟩": r"\rangle",
              "|": "|", "‖": r"\|", "⌈": r"\lceil", "⌉": r"\rceil", "⌊": r"\lfloor", "⌋": r"\rfloor"}


def _delimiter(ch: str) -> str:
    """A bracket as \\left / \\right take it: ( ) [ ] as they are, others by name, one LaTeX has no name for as none."""
    return ch if ch and ch in "()[]" else DELIMITERS.get(ch, ".")


def latex(el) -> str:
    """An ``m:oMath`` (or any OMML element) as LaTeX."""
    return _join(_node(c) for c in el).strip()


def _join(parts) -> str:
    out = ""
    for p in parts:
        if out and p and out[-1].isalpha() and (p[0].isalnum()) and _ends_in_command(out):
            out += " "  # "\pi" then "r": "\pi r", not "\pir"
        out += p
    return out


def _ends_in_command(s: str) -> bool:
    i = len(s)
    while i and s[i - 1].isalpha():
        i -= 1
    return i > 0 and s[i - 1] == "\\"


def _local(el) -> str:
    return el.tag[len(M):] if isinstance(el.tag, str) and el.tag.startswith(M) else ""


def _child(el, name: str):
    return el.find(M + name)


def _arg(el, name: str) -> str:
    c = _child(el, name)
    return "" if c is None else latex(c)


def _val(el, pr: str, name: str, default: str | None) -> str | None:
    props = _child(el, pr)
    v = props.find(M + name) if props is not None else None
    return default if v is None else v.get(M + "val", default)


def _text(s: str) -> str:
    return _join(SYMBOLS.get(ch, ch) for ch in s)


def _group(s: str) -> str:
    """A script's base: braced unless it is one letter, digit or command."""
    bare = len(s) == 1 or (s.startswith("\\") and s[1:].isalpha())
    return s if bare else "{" + s + "}"


def _node(el) -> str:  # noqa: C901 - one branch per OMML structure
    kind = _local(el)
    if el.tag == W_INS:  # a tracked insertion inside an equation: its runs are the equation's
        return latex(el)
    if not kind or kind.endswith("Pr"):
        return ""  # properties, and Word's own (w:) markup inside a run
    if kind == "r":
        t = "".join(x.text or "" for x in el.iter(M + "t"))
        props = _child(el, "rPr")
        return t if props is not None and props.find(M + "nor") is not None else _text(t)  # "normal text" as is
    if kind == "f":
        cmd = r"\binom{" if _val(el, "fPr", "type", "bar") == "noBar" else r"\frac{"  # no bar: n over k
        return cmd + _arg(el, "num") + "}{" + _arg(el, "den") + "}"
    if kind == "sSup":
        return _group(_arg(el, "e")) + "^{" + _arg(el, "sup") + "}"
    if kind == "sSub":
        return _group(_arg(el, "e")) + "_{" + _arg(el, "sub") + "}"
    if kind == "sSubSup":
        return _group(_arg(el, "e")) + "_{" + _arg(el, "sub") + "}^{" + _arg(el, "sup") + "}"
    if kind == "sPre":
        return "{}_{" + _arg(el, "sub") + "}^{" + _arg(el, "sup") + "}" + _arg(el, "e")
    if kind == "rad":
        deg = _arg(el, "deg")
        return r"\sqrt" + (f"[{deg}]" if deg and _val(el, "radPr", "degHide", "0") in ("0", "off") else "") \
            + "{" + _arg(el, "e") + "}"
    if kind == "nary":
        op = _val(el, "naryPr", "chr", "∫")
        sub, sup = _arg(el, "sub"), _arg(el, "sup")
        return _join([NARY.get(op, _text(op)) + (f"_{{{sub}}}" if sub else "") + (f"^{{{sup}}}" if sup else ""),
                      _arg(el, "e")])
    if kind == "d":
        beg, end = _val(el, "dPr", "begChr", "("), _val(el, "dPr", "endChr", ")")
        sep = _text(_val(el, "dPr", "sepChr", "|"))
        inner = sep.join(latex(e) for e in el.findall(M + "e"))
        return _join([r"\left" + _delimiter(beg), inner, r"\right" + _delimiter(end)])
    if kind == "func":
        name = _arg(el, "fName")
        return _join(["\\" + name if name in FUNCTIONS else name, _arg(el, "e")])
    if kind == "acc":
        cmd = ACCENTS.get(_val(el, "accPr", "chr", "\u0302"), r"\hat")
        return cmd + "{" + _arg(el, "e") + "}"
    if kind == "bar":
        return (r"\underline{" if _val(el, "barPr", "pos", "bot") == "bot" else r"\overline{") + _arg(el, "e") + "}"
    if kind == "groupChr":
        top = _val(el, "groupChrPr", "pos", "bot") == "top"
        return (r"\overbrace{" if top else r"\underbrace{") + _arg(el, "e") + "}"
    if kind == "limLow":  # "lim" under "n -> infinity"
        base = _arg(el, "e")
        return ("\\" + base if base in FUNCTIONS else _group(base)) + "_{" + _arg(el, "lim") + "}"
    if kind == "limUpp":
        return _group(_arg(el, "e")) + "^{" + _arg(el, "lim") + "}"
    if kind == "m":
        rows = [" & ".join(latex(e) for e in mr.findall(M + "e")) for mr in el.findall(M + "mr")]
        return r"\begin{matrix}" + r" \\ ".join(rows) + r"\end{matrix}"
    if kind == "eqArr":
        rows = [latex(e) for e in el.findall(M + "e")]
        return rows[0] if len(rows) == 1 else r"\begin{array}{l}" + r" \\ ".join(rows) + r"\end{array}"
    return latex(el)  # e, num, den, box, borderBox, phant, and what this reader does not know: their contents
