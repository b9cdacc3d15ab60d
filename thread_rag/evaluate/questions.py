"""Questions made from the library itself, each with the chunks that answer it (``thread-rag eval``).

From structure, deterministic and free: a section's heading ("What are the steps for configuring the network?"),
a procedure's "To ..." line before numbered steps ("How do I create a bucket?"), a table row's cell by its row and
column labels, a defined term ("What does Confidential Information mean?"), an item of a listing sentence asked from
the item's side ("Debian supports amd64, arm64, ..." -> "What supports arm64?"). Unanswerable probes: an answerable
question about a product the library never names. Model-written questions live in ``model_questions.py``.

A question records its document's key (``doc_key``: the content key of its chunks and the recipe that cut them):
when the document or its chunking changes, its questions are stale (their gold chunk ids may point elsewhere) and
are made again.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field

KINDS = ("heading", "procedure", "table", "term", "list", "model", "probe")
STRUCTURE_KINDS = ("heading", "procedure", "table", "term", "list")


@dataclass
class EvalQuestion:
    qid: str
    kind: str                 # one of KINDS
    text: str
    doc_id: str
    doc_key: str              # doc_key() of its document when the question was made
    gold: list                # chunk ids that answer it ([] for a probe)
    section: str = ""         # the heading path of its first gold chunk, " > " between levels ("" none)
    answerable: bool = True
    source: str = ""          # what it was made from (heading, row, defining sentence, chunk id)
    extra: dict = field(default_factory=dict)

    @classmethod
    def make(cls, kind: str, text: str, doc, gold: list, section: str, source: str, **kw) -> "EvalQuestion":
        key = doc_key(doc)
        qid = kind[:2] + "_" + hashlib.sha256(f"{key}\n{kind}\n{text}".encode()).hexdigest()[:10]
        return cls(qid, kind, text, doc.doc_id, key, list(gold), section, source=source, **kw)


def doc_key(doc) -> str:
    """What a question's gold chunk ids hold for: the content key of the document's chunks (text, pages, headings and
    the recipe that cut them); a record from before content keys: its file's hash, strategy and chunk count."""
    return getattr(doc, "content_key", "") or f"{doc.content_hash}:{getattr(doc, 'chunk_strategy', '')}:" \
                                               f"{getattr(doc, 'chunk_count', '')}"


# --- headings ----------------------------------------------------------------------------------------------------
_NUMBERING = re.compile(r"^(?:(?:chapter|section|part|appendix|article)\s+)?(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)+)[.):]?\s+",
                        re.I)
GENERIC = {"overview", "introduction", "contents", "table of contents", "index", "notes", "note", "summary",
           "see also", "references", "related topics", "related information", "next steps", "glossary",
           "bibliography", "preface", "abstract", "acknowledgements", "appendix", "document history", "tip", "warning",
           "important", "example", "examples", "topics", "resources", "license", "copyright"}
VERBS = {"install", "configure", "set", "create", "add", "remove", "delete", "enable", "disable", "use", "run", "start",
         "stop", "index", "ask", "search", "change", "update", "upgrade", "build", "connect", "choose", "select",
         "write", "open", "close", "make", "get", "check", "verify", "prepare", "download", "boot", "mount", "edit",
         "define", "manage", "deploy", "launch", "restore", "monitor", "troubleshoot", "migrate", "import", "export",
         "compare", "find", "keep", "access", "specify", "view", "test", "move", "copy", "rename", "load", "save",
         "sign", "register", "upload", "share", "attach", "detach", "grant", "revoke", "rotate", "reset", "resize",
         "scale", "schedule", "tag", "track", "turn", "understand", "avoid", "fix", "recover", "replace", "partition",
         "format", "encrypt", "decrypt", "log", "list", "read", "print", "send", "receive", "apply", "assign"}
_VAGUE = {"following", "so", "as", "above", "below", "example", "result", "default", "same", "next", "first", "last",
          "also", "even", "if", "then", "when", "where", "while", "now", "only", "just", "not", "both", "either",
          "neither", "many", "most", "more", "less", "very", "often", "sometimes", "always", "never", "however",
          "thus", "therefore", "but", "or", "and", "because", "since", "although", "there", "here", "again", "still"}
_PRONOUN = {"this", "that", "it", "these", "those", "there", "they", "he", "she", "we", "you", "i", "here", "such",
            "each", "which", "what", "other", "some", "any", "all", "one", "its"}


def clean_heading(h: str) -> str:
    """A heading as a question quotes it: no Markdown anchors, escapes, code ticks or numbering."""
    h = re.sub(r"<[^>]{0,200}>", "", h)
    h = re.sub(r"\\([^\w\s])", r"\1", h)
    h = " ".join(h.replace("`", "").split()).strip(" #:*")
    return _NUMBERING.sub("", h).strip()


def _lower_first(text: str) -> str:
    """The first letter lowered unless the word looks like a name or an acronym (``S3``, ``AWS``, ``IPv6``)."""
    w = text.split(" ", 1)[0]
    if len(w) > 1 and (any(c.isupper() for c in w[1:]) or any(c.isdigit() for c in w)):
        return text
    return text[:1].lower() + text[1:]


def heading_question(heading: str) -> str | None:
    """A question a reader would ask to reach the section under ``heading``; None for a heading that asks nothing
    (``Overview``, one noun, a long sentence)."""
    h = clean_heading(heading)
    words = h.split()
    if not words or h.lower() in GENERIC or len(words) > 14 or not re.search(r"[^\W\d_]{3}", h):
        return None
    if h.endswith("?"):
        return h
    first = words[0].lower()
    if first == "how" and len(words) > 2 and words[1].lower() == "to":
        return f"How do I {' '.join(words[2:])}?"
    if first == "to" and len(words) > 1:
        return f"How do I {' '.join(words[1:])}?"
    if first in VERBS and len(words) > 1:
        return f"How do I {_lower_first(h)}?"
    if first.endswith("ing") and len(first) > 4:
        return f"What are the steps for {_lower_first(h)}?"
    if len(words) == 1:
        return None
    sentence_case = first in ("the", "a", "an") or words[1][:1].islower()
    return f"What should I know about {_lower_first(h) if sentence_case else h}?"


def heading_questions(thread) -> list[EvalQuestion]:
    """One question per section: its gold is every chunk with that heading path (a long section's gold is large,
    which makes its hit@5 easy), plus a question for each heading line packed inside a chunk (Markdown, HTML, DOCX),
    whose gold is that chunk."""
    doc, chunks = thread.record, thread.chunks
    own: dict[tuple, list] = {}
    for c in chunks:
        own.setdefault(tuple(c.heading_path or ()), []).append(c.chunk_id)
    out, seen = [], set()
    for path, ids in own.items():
        if not path:
            continue
        text = heading_question(path[-1])
        if text is None or text.lower() in seen:
            continue
        seen.add(text.lower())
        out.append(EvalQuestion.make("heading", text, doc, ids, " > ".join(clean_heading(h) for h in path), path[-1]))
    for i, c in enumerate(chunks if doc.kind in PACKED_HEADING_KINDS else ()):
        lines = c.text.split("\n")
        for j, line in enumerate(lines[1:-1], 1):  # a short section packed into the chunk of the one before it
            if not _packed_heading(line, lines[j + 1]):
                continue
            text = heading_question(line)
            if text is None or text.lower() in seen:
                continue
            seen.add(text.lower())
            section = " > ".join([clean_heading(h) for h in c.heading_path or ()] + [clean_heading(line)])
            out.append(EvalQuestion.make("heading", text, doc, [c.chunk_id], section, line))
    return out


# a heading packed inside a chunk is a line of its own only where the loader keeps blocks as lines
PACKED_HEADING_KINDS = ("markdown", "html", "docx")


def _packed_heading(line: str, nxt: str) -> bool:
    """A line that reads as a heading: 2-10 words, a capital first, no closing punctuation, not a row, item or
    code, followed by a line that starts a new block."""
    w = line.split()
    return (2 <= len(w) <= 10 and line[:1].isupper() and not re.search(r"[.:;,!?|)]$", line.rstrip())
            and not re.match(r"\s*(?:[-*+]|\d+[.)])\s", line) and "|" not in line and "`" not in line
            and (nxt[:1].isupper() or nxt[:1].isdigit()))


def section_of(chunk) -> str:
    return " > ".join(clean_heading(h) for h in chunk.heading_path or ())


# --- procedures --------------------------------------------------------------------------------------------------
_TO_LINE = re.compile(r"^\s*(?:#+\s*)?(?:\*\*)?To ([a-z][^\n.:,;]{3,90}?)\s*[:.]?(?:\*\*)?[:.]?\s*$", re.M)
_STEP = re.compile(r"^\s*(?:\d{1,2}[.)]|step \d{1,2}[.:])\s+\S", re.I | re.M)


def procedure_questions(thread) -> list[EvalQuestion]:
    """"To create a bucket:" followed by numbered steps: "How do I create a bucket?", gold the chunks holding the
    line and the first step."""
    doc, chunks = thread.record, thread.chunks
    out, seen = [], set()
    for i, c in enumerate(chunks):
        for m in _TO_LINE.finditer(c.text):
            after = c.text[m.end():]
            nxt = chunks[i + 1].text if i + 1 < len(chunks) else ""
            step = _STEP.search(after) or (None if after.strip() else _STEP.match(nxt.lstrip()))
            if step is None or (after.strip() and step.start() > 400):
                continue
            text = f"How do I {clean_heading(m.group(1))}?"
            if len(text.split()) > 16:
                continue
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            gold = [c.chunk_id] + ([chunks[i + 1].chunk_id] if not after.strip() and i + 1 < len(chunks) else [])
            out.append(EvalQuestion.make("procedure", text, doc, gold, section_of(c),
                                         m.group(0).strip()))
    return out


# --- tables ------------------------------------------------------------------------------------------------------
def _cells(line: str) -> list[str] | None:
    s = line.strip()
    if s.startswith("|") and s.endswith("|") and len(s) > 2:
        return [c.strip() for c in s[1:-1].split("|")]
    if s.count(" | ") >= 1 and not s.startswith(("-", "*")):  # DOCX rows: "a | b | c"
        return [c.strip() for c in s.split(" | ")]
    return None


def _is_rule(cells: list[str]) -> bool:
    return all(re.fullmatch(r":?-{2,}:?", c) or not c for c in cells)


def tables(text: str, markdown: bool = False) -> list[tuple[list[str], list[list[str]]]]:
    """Each table of a chunk's text: (header cells, data rows), from 3+ consecutive row lines of equal width. In
    Markdown the header is the row above the ``|---|`` rule (a table cut by a chunk boundary without it is left out);
    elsewhere (rows the loaders wrote) the first row."""
    out, run = [], []
    for line in text.split("\n") + [""]:
        cells = _cells(line)
        if cells is not None and (not run or len(cells) == len(run[0])):
            run.append(cells)
            continue
        rule = next((i for i, r in enumerate(run) if _is_rule(r)), None)
        if markdown:
            run = run[rule - 1:] if rule else []
        rows = [r for r in run if not _is_rule(r)]
        if len(rows) >= 3 and len(rows[0]) >= 2:
            out.append((rows[0], rows[1:]))
        run = [cells] if cells is not None else []
    return out


def table_questions(thread, rng: random.Random) -> list[EvalQuestion]:
    """For up to two rows a table: "In <section>, what is the <column> for <row label>?", gold every chunk holding
    the row."""
    doc, chunks = thread.record, thread.chunks
    out, seen = [], set()
    for c in chunks:
        for header, rows in tables(c.text, markdown=doc.kind == "markdown"):
            good = [r for r in rows if r[0] and len(r[0].split()) <= 8 and re.search(r"[^\W\d_]", r[0])
                    and r.count(r[0]) == 1]
            for row in rng.sample(good, min(2, len(good))):
                cols = [j for j in range(1, len(row)) if row[j] and header[j] and re.search(r"[^\W\d_]", header[j])
                        and row[j] != row[0]]
                if not cols:
                    continue
                j = rng.choice(cols)
                header = [clean_heading(x) for x in header]
                row = [clean_heading(x) for x in row]
                where = (c.heading_path or [""])[-1]
                lead = f"In {clean_heading(where)}, what" if clean_heading(where) else "What"
                text = f"{lead} is the {header[j]} for {row[0]}?"
                if text.lower() in seen:
                    continue
                seen.add(text.lower())
                line_key = row[0] + " | " if " | " in c.text else row[0]
                gold = [x.chunk_id for x in chunks if line_key in x.text and row[j] in x.text] or [c.chunk_id]
                out.append(EvalQuestion.make("table", text, doc, gold, section_of(c),
                                             " | ".join(row), extra={"answer": row[j]}))
    return out


# --- defined terms -----------------------------------------------------------------------------------------------
_DEFINES = re.compile(r"(?:^|(?<=[.!?]\s)|(?<=\n))[\"\u201c]?(?P<term>[A-Z][\w\-/]*(?: [\w\-/]+){0,4}?)[\"\u201d]?"
                      r"(?: \([^)]{1,40}\))? (?P<verb>means|refers to|is defined as|is an?) (?P<rest>[^\n]{15,})")


def term_questions(thread) -> list[EvalQuestion]:
    """"X means ..." / "X is a ..." at a sentence's start: "What does X mean?" / "What is X?"."""
    doc, chunks = thread.record, thread.chunks
    out, seen = [], set()
    for c in chunks:
        for m in _DEFINES.finditer(c.text):
            term, verb = m.group("term").strip(), m.group("verb")
            words = term.split()
            half = len(words) // 2
            if len(words) % 2 == 0 and words[:half] == words[half:]:  # a title run into its first sentence
                term, words = " ".join(words[:half]), words[:half]
            if (len(term) < 3 or term.lower() in seen or len(words) > 4 or {w.lower() for w in words} & _NOT_A_TERM
                    or words[0].lower().endswith("ly")):
                continue
            if words[0] in ("A", "An", "The") and len(words) > 1:
                term = _lower_first(term)
            text = (f"What does {term} mean?" if verb in ("means", "refers to", "is defined as")
                    else f"What is {term}?")
            seen.add(term.lower())
            sentence = m.group(0).strip()[:200]
            out.append(EvalQuestion.make("term", text, doc, [c.chunk_id], section_of(c), sentence))
    return out


_NOT_A_TERM = _VAGUE | _PRONOUN


# --- listing sentences -------------------------------------------------------------------------------------------
_I = r"(?:[^,.;:?!\n]|\.(?=[^\s.]))"  # a character of an item: a full stop inside one ("5.0", "e.g") ends nothing
_DET = r"(?:a|an|the|his|her|their|our|my|your|its|and|or)\b"  # a verb phrase holding one has begun its object
_LISTING = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))(?P<subj>(?:(?:The|A|An) [\w'/\-]+|[A-Z][\w'/\-]*)(?: [A-Z0-9][\w'/.\-]*){0,3}) "
    rf"(?P<verb>(?!{_DET})[a-z]+(?: (?!{_DET})[a-z]+){{0,3}}) "
    rf"(?P<items>{_I}{{1,60}}(?:, {_I}{{1,60}}){{2,}}(?:,? (?:and|or) {_I}{{1,60}})?)(?=[.;:\n]|$)")
_LINKS = {"of", "in", "to", "by", "for", "from", "with", "on", "at", "into", "via", "as", "than", "over", "under",
          "during", "throughout", "within", "without", "across", "among", "between", "about", "around", "through",
          "until", "despite", "upon", "against", "along", "beyond", "behind", "near"}  # no item opens so
_COPULA = {"is", "are", "was", "were", "be", "been"}
_NOT_A_SUBJECT = _NOT_A_TERM | _LINKS | VERBS | {"you", "a", "an", "if", "once", "after", "before", "unless"}
LIST_MIN_ITEMS = 4   # a shorter run of commas is a sentence's clauses more often than a list
LIST_PER_SENTENCE = 2
LIST_MAX_HOLDERS = 3  # an item more chunks list is not asked: a question much of the library answers says little


def _listing_items(items: str) -> list[str]:
    """The items of a listing's comma run ("A, B, C and D", "A, B, C, and D" -> A, B, C, D); [] when one does not
    read as an item (more than five words, no letter, a clause with its own verb, a step of a menu path ("choose
    **Actions**"), a phrase opening on a preposition, markup or brackets): such a run is a sentence's clauses."""
    parts = [re.sub(r"^(?:and|or)\s+", "", p.strip()) for p in re.split(r",\s+", items)]
    parts = parts[:-1] + [x for x in re.split(r"\s+(?:and|or)\s+", parts[-1]) if x]
    out = []
    for p in parts:
        words = p.split()
        if (not words or len(words) > 5 or not re.search(r"[^\W\d_]", p) or words[0].lower() in _NOT_A_TERM | _LINKS
                or {w.lower() for w in words} & {"is", "are", "was", "were", "be", "can", "will", "has", "have"}
                or words[0] in VERBS or re.search(r"[*\\`\[\]()<>{}]", p)):
            return []
        out.append(p)
    return out


def _join_wrapped(text: str) -> str:
    """Lines a wrap broke joined: a line is continued by the next unless it ends a sentence or a clause, is short
    and has no comma (a heading: "Supported hardware"), or the next opens a list item, a row or a heading."""
    out: list[list[str]] = []  # each output line as its pieces
    for line in text.split("\n"):
        prev = out[-1][-1].rstrip() if out else ""
        if (prev and line.strip() and not re.search(r"[.:;!?]$", prev) and (len(prev) >= 40 or prev.endswith(","))
                and not re.match(r"\s*(?:[-*+#|\u2022]|\d+[.)]\s)", line)):
            out[-1][-1] = prev
            out[-1].append(line.strip())
        else:
            out.append([line])
    return "\n".join(" ".join(pieces) for pieces in out)


def listings(text: str) -> list[tuple[str, str, list[str], str]]:
    """Each listing sentence of a text: (subject, verb phrase, items, the sentence). The subject is a word with a
    capital first, or an article and a word, and up to three words after it that start with a capital or a digit
    ("Debian GNU/Linux 13"), and is no pronoun, preposition or imperative verb ("Select the instance, choose ...");
    the verb phrase is 1-4 lower-case words with no article, possessive or "and" in it (that would mean its object
    began) and does not end on "is"/"are" (the subject's noun before it: "The driest months are ..."); then a run of
    at least ``LIST_MIN_ITEMS`` comma-separated items. A run cut by a colon loses its last item ("Magic: The
    Gathering")."""
    out = []
    text = _join_wrapped(text)
    for m in _LISTING.finditer(text):
        subj, verb = m.group("subj"), m.group("verb")
        if subj.split()[0].lower() in _NOT_A_SUBJECT or verb.split()[0] in _NOT_A_TERM or \
                verb.split()[-1] in _COPULA:
            continue
        items = _listing_items(m.group("items"))
        if text[m.end():m.end() + 1] == ":":
            items = items[:-1]
        if len(items) >= LIST_MIN_ITEMS:
            out.append((subj, verb, items, m.group(0).strip()))
    return out


def _asks_who(subject: str) -> bool:
    """A subject that reads as a person's name (two or three capitalised words of letters, no article): "Who"."""
    words = subject.split()
    return 2 <= len(words) <= 3 and words[0] not in ("The", "A", "An") and all(
        w[:1].isupper() and w.replace("'", "").replace("-", "").isalpha() for w in words)


def library_key(threads) -> str:
    """What a question whose answer may be in any document holds for: the keys of every document of the library."""
    keys = sorted(f"{t.record.doc_id}={doc_key(t.record)}" for t in threads)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


def _sentences(thread) -> list[tuple[str, list[str]]]:
    """(chunk id, its sentences lower-cased, wrapped lines joined) for each chunk of ``thread``."""
    return [(c.chunk_id, re.split(r"(?<=[.!?])\s+", " ".join(_join_wrapped(c.text).lower().split())))
            for c in thread.chunks]


def listed_in(sentences: list, verb: str, item: str) -> list[str]:
    """The chunks with a sentence that names ``item`` after ``verb`` (whole words, any case): the gold of a list
    question, found more loosely than the questions are made (a list run past a colon, an item in brackets)."""
    pat = re.compile(rf"\b{re.escape(verb.lower())}\b.*(?<!\w){re.escape(item.lower())}(?!\w)")
    return [cid for cid, sents in sentences if any(verb.lower() in s and pat.search(s) for s in sents)]


def list_questions(threads: list, rng: random.Random, library: list | None = None) -> list[EvalQuestion]:
    """Up to ``LIST_PER_SENTENCE`` items of each listing sentence of ``threads`` asked from the item's side, as a
    reader looks up who or what has it ("Geneva Durben likes Quokkas, ..." -> "Who likes Quokkas?"); the gold is
    every chunk of the ``library`` (default ``threads``: search reads the whole library) that names the item after
    the same verb. A question records the library's key (``extra["library"]``): a document that joins or changes
    may change its answer."""
    found = [(t.record, c, subj, verb, items, sent) for t in threads for c in t.chunks
             for subj, verb, items, sent in listings(c.text)]
    if not found:
        return []
    library = library or threads
    sentences = [x for t in library for x in _sentences(t)]
    key, gold_of, out, seen = library_key(library), {}, [], set()

    def gold(verb: str, item: str) -> list:
        if (verb, item.lower()) not in gold_of:
            gold_of[(verb, item.lower())] = listed_in(sentences, verb, item)
        return gold_of[(verb, item.lower())]

    for doc, c, subj, verb, items, sent in found:
        good, asked = [it for it in items if it.lower() != subj.lower()], 0
        for it in rng.sample(good, len(good)):
            if asked == LIST_PER_SENTENCE:
                break
            text = f"{'Who' if _asks_who(subj) else 'What'} {verb} {it}?"
            ids = gold(verb, it)
            if text.lower() in seen or not 0 < len(ids) <= LIST_MAX_HOLDERS or c.chunk_id not in ids:
                continue
            seen.add(text.lower())
            asked += 1
            out.append(EvalQuestion.make("list", text, doc, ids, section_of(c), sent[:200],
                                         extra={"subject": subj, "library": key}))
    return out


# --- probes ------------------------------------------------------------------------------------------------------
ABSENT = ("OS/2 Warp", "a Commodore 64", "Windows 98", "Solaris 2.6", "BeOS 5", "an Amiga 500", "IRIX 6.5",
          "NetWare 4", "a PDP-11", "MS-DOS 3.3", "HP-UX 10.20", "a Palm Pilot")


def _product(name: str) -> str:
    """The product a probe names, without its article or version: "an Amiga 500" -> "Amiga"."""
    return re.sub(r"^an? |\s+[\d.]+[a-z]*$", "", name)


def probe_questions(answerable: list[EvalQuestion], library_text: str, n: int, rng: random.Random,
                    docs: dict) -> list[EvalQuestion]:
    """``n`` unanswerable probes: an answerable question turned to a product the library never names ("... on
    Windows 98?"), so the library is on the question's topic but cannot answer it."""
    low = library_text.lower()
    absent = [a for a in ABSENT if _product(a).lower() not in low]
    base = [q for q in answerable if q.kind in ("heading", "procedure", "term") and q.text.endswith("?")]
    if not absent or not base:
        return []
    out = []
    for q in rng.sample(base, min(n, len(base))):
        product = rng.choice(absent)
        text = q.text[:-1] + (f" on {product}?" if q.kind != "term" else f" in {product}?")
        out.append(EvalQuestion.make("probe", text, docs[q.doc_id], [], q.section, q.qid, answerable=False,
                                     extra={"product": product}))
    return out


# --- the set -----------------------------------------------------------------------------------------------------
def structure_questions(threads: list, seed: int = 13, library: list | None = None) -> dict[str, list[EvalQuestion]]:
    """Every structure question of each document, by kind (deterministic for ``seed``); ``library``: every
    document search reads (default ``threads``), where a list question's answer may be too."""
    rng = random.Random(seed)
    out: dict[str, list] = {k: [] for k in STRUCTURE_KINDS}
    for t in threads:
        out["heading"] += heading_questions(t)
        out["procedure"] += procedure_questions(t)
        out["table"] += table_questions(t, rng)
        out["term"] += term_questions(t)
    out["list"] = list_questions(threads, rng, library)
    return out


def sample_mix(pools: dict[str, list], n: int, seed: int = 13) -> list[EvalQuestion]:
    """``n`` questions taken in turn from each kind (and, within a kind, from each document in turn), seeded; a
    kind with too few questions leaves its turns to the others. Questions with the same text are kept once."""
    rng = random.Random(seed)
    queues = {}
    for kind, qs in pools.items():
        by_doc: dict[str, list] = {}
        for q in qs:
            by_doc.setdefault(q.doc_id, []).append(q)
        for v in by_doc.values():
            rng.shuffle(v)
        docs = sorted(by_doc)
        rng.shuffle(docs)
        order, i = [], 0
        while any(by_doc[d] for d in docs):  # round robin over documents
            d = docs[i % len(docs)]
            if by_doc[d]:
                order.append(by_doc[d].pop())
            i += 1
        queues[kind] = order
    out, texts = [], set()
    while len(out) < n and any(queues.values()):
        for kind in list(queues):
            if queues[kind] and len(out) < n:
                q = queues[kind].pop(0)
                if q.text.lower() not in texts:
                    texts.add(q.text.lower())
                    out.append(q)
    return out
