"""Is this chat message a question, or a request (list, index, remove, pre-heat, nested passages, compare, settings,
statistics, help)? Decided from what it means, not from fixed phrasings.

1. The message's own arguments are found first: paths (``FILE``; whether each exists), document ids (``DOC``) and
   documents named as the catalog knows them ("the widget manual", "the 2022 install guide", "the old guide").
2. The message, its paths and documents masked, is embedded with the query embedder search already loaded, and read
   with a few cue words by a softmax regression fitted on example requests for each action and example questions
   (``intent_examples``; ``Examples``): a probability for each reading. No model call.
3. A reading whose object the message does not name is dropped (``has_object``: a request to index a path with
   nothing after it but where it goes, a removal verb and a document named unambiguously, two documents or versions
   to compare, several passages, summaries to pre-heat; a view never names a document's content); a weak reading
   left after the best was dropped is no request (``ALONE``).
4. When the two best readings are close (``MARGIN``), the model (when there is one) picks between them and
   "question" in one short constrained call; with no model, a close call that would change the library is a
   question. A change asked in a question's words ("how do I add FILE to my PATH?") is a question, no model asked.
5. An action that lacks what it needs (index without a path, remove without a document, or two documents that
   match one name) names what is missing instead of guessing; nothing changes.

"index FILE and tell me how to X" is two things: the request, then the question (``Intent.then``).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ThreadRagError
from ..ingest.loaders import SUPPORTED_SUFFIXES as SUPPORTED
from .intent_examples import EXAMPLES

QUESTION = "question"
VIEWS = ("help", "show_settings", "show_stats")  # shown, nothing carried out (the readings: intent_examples.EXAMPLES)
CHANGES = frozenset({"index_new_document", "remove_document", "pre_heat_summaries"})  # write to the library
ALONE = 0.3  # a reading left after the best one was dropped (its object unnamed) needs this probability
MARGIN = 0.2  # readings whose probabilities are closer are a close call (chosen among 0-0.5 by leave-one-out on the
              # examples and on requests.json; tests/test_intent.py checks the leave-one-out figures still hold)

MEANINGS = {
    "list_available_documents": "see which documents are indexed",
    "index_new_document": "add a file or folder to the library",
    "remove_document": "remove a document from the library",
    "pre_heat_summaries": "have summaries computed ahead of time",
    "nested_retrieve": "get several separate, non-overlapping passages",
    "compare_documents": "compare two documents (e.g. two versions of a manual)",
    "show_settings": "see the settings or which models are in use",
    "show_stats": "see how many documents and chunks the library holds",
    "help": "learn what the assistant can do",
    QUESTION: "a question to answer from the documents' content",
}
INTENT_PROMPT = """A user wrote to a document assistant:
"{text}"
What does the user want? Options:
{options}
Reply with JSON {{"action": "<option>"}}."""

TOKEN_RE = re.compile(r"\"[^\"]+\"|'[^']+'|\S+")
DOC_RE = re.compile(r"\bDOC([1-9][0-9]*)\b", re.I)
WORD_RE = re.compile(r"[a-z]+|[0-9]+")
LIMIT_RE = re.compile(r"\b([1-9]|[1-4][0-9]|50|two|three|four|five|six|seven|eight|nine|ten)\s+(?:[\w,-]+\s+){0,2}?"
                      r"(?:passages|sections|parts|excerpts|places|snippets|chunks|bits|pieces)\b", re.I)
NUMBERS = {w: i for i, w in enumerate("two three four five six seven eight nine ten".split(), start=2)}
QUESTION_SHAPE = re.compile(r"^\s*(?:how|what|why|when|where|which|who|whose|is|are|does|do|did|should|"
                            r"(?:can|could|will|would|may|might)\s+(?!you\b|u\b)\w+)\b", re.I)
# "index FILE and tell me how to X": where the question after a request starts
_THEN = r"(?:and\s+(?:then|also)|and|then|after\s+that|afterwards)"
THEN_RE = re.compile(r"(?:\s*[,;.:]\s*(?:" + _THEN + r"|next|also)?|\s+" + _THEN + r")\s*[,:]?\s*(?:then\s+)?"
                     r"(?:(?:please\s+)?(?:(?:tell|show)\s+me|let\s+me\s+know|answer(?:\s+this)?)\s*[:,]?\s*)?"
                     r"(?=(?:tell|show|explain|answer|what|how|why|when|where|which|who|is|are|does|do|can|could|"
                     r"give|find|summari[sz]e|describe|list)\b)", re.I)
TOPIC_RE = re.compile(r"\b(?:about|regarding|concerning|on the topic of|in terms of|on|for)\s+(?:the\s+)?(.+?)"
                      r"[\s?.!]*$", re.I)
_CMP = r"(?:compare|comparison|diff|differ|differs|differences?|changed?|changes|vary|varies)"
TOPIC_BEFORE_RE = re.compile(
    r"(?:\b(?:does|do|did|is|are|has|have)\s+(?:the\s+)?(?P<subject>.+?)\s+" + _CMP +
    r"|\b" + _CMP + r"\s+(?:in|about|regarding|concerning|for|to|of|on)\s+(?:the\s+)?(?P<object>.+?)"
    r"|^\s*(?:please\s+|(?:can|could|would)\s+you\s+(?:please\s+)?)?compare\s+(?:the\s+)?(?P<compared>.+?))"
    r"\s+(?:between|in|from|across|of|for)\s+(?:the\s+)?$", re.I)
_NOT_A_TOPIC = frozenset("it they this that these those them there what which the a an two both versions".split())
NAME_STOP = frozenset("the a an of and for to in on v doc docs document documents pdf md txt html docx final copy "
                      "version edition file".split())
ENDINGS = frozenset({"s", "es", "ed", "ing", "ation", "ations", "er", "ers"})  # "installation" names "install"
OLD = frozenset("old older oldest earlier previous first original outdated former".split())
NEW = frozenset("new newer newest latest current recent second updated".split())


@dataclass
class Mention:
    """A document or a path as the message names it (``start``/``end``: where in the message)."""
    text: str
    start: int
    end: int
    doc_id: str | None = None   # a document: its id
    words: int = 0              # ... how many words of its name the message has (an id or the file name: 9)
    exists: bool = False        # a path: whether it is there


@dataclass
class Intent:
    action: str
    args: dict = field(default_factory=dict)
    then: str = ""          # a question asked after the request ("... and tell me how to reset it")
    missing: str = ""       # what the request lacks, said to the user instead of guessing (nothing is done)
    scores: dict = field(default_factory=dict)  # the three most probable readings before any was dropped (rounded)
    asked_model: bool = False
    ms: float = 0.0


def _norm(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def name_tokens(name: str) -> list[str]:
    """The words of a document's file name that can name it in a message ("install-guide-2022.md")."""
    stem = Path(name).stem.lower() if Path(name).suffix.lower() in SUPPORTED else name.lower()
    return [_norm(w) for w in WORD_RE.findall(stem) if w not in NAME_STOP and (len(w) > 1 or w.isdigit())]


def _year(tokens: list[str]) -> int:
    years = [int(t) for t in tokens if t.isdigit() and len(t) == 4]
    return max(years) if years else 0


def named_documents(text: str, documents: list[tuple[str, str]]) -> list[Mention]:
    """Documents the message names by id (known or not: the tool names an unknown one) or by name, in the order it
    names them. A name counts when the message has two of its file name's words, or one word no other document's
    name has (4 letters or more, or a year); a word of 5 letters or more counts with an ending ("installation" for
    "install"). ``words``: 9 for an id, the whole file name, or every word of a name of two or more words; else how
    many of its words (a one-word name, "notes", is never an unambiguous object). Names that fit several documents
    alike are told apart by the message's years, then by "old"/"new" words (older: the earlier year in the name, else
    the earlier id); still alike, all of them are returned."""
    found = [Mention(m.group(0), m.start(), m.end(), doc_id=f"DOC{m.group(1)}", words=9) for m in DOC_RE.finditer(text)]
    # an unknown id is named all the same: the tool says it is unknown
    words = [(_norm(m.group(0)), m.start(), m.end()) for m in WORD_RE.finditer(text.lower())]
    toks = {d: name_tokens(n) for d, n in documents}
    names, low = {d: n.lower() for d, n in documents}, text.lower()
    counts: dict[str, int] = {}
    for ts in toks.values():
        for t in set(ts):
            counts[t] = counts.get(t, 0) + 1
    by_name = []
    for doc_id, ts in toks.items():
        hits = [(t, s, e) for w, s, e in words for t in ts if w == t or (len(t) >= 5 and w.startswith(t)
                                                                        and w[len(t):] in ENDINGS)]
        kinds = {w for w, _, _ in hits}
        unique = [w for w in kinds if counts[w] == 1 and (len(w) == 4 if w.isdigit() else len(w) >= 4)]
        if len(kinds) >= 2 or (len(ts) == 1 and kinds) or unique:
            own = [h for h in hits if counts[h[0]] == 1] or hits
            whole = len(set(ts)) > 1 and len(kinds) == len(set(ts))
            by_name.append(Mention(text[own[0][1]:own[-1][2]], own[0][1], own[-1][2], doc_id=doc_id,
                                   words=9 if whole or names[doc_id] in low else len(kinds)))
    by_name = _old_and_new(text, _tell_apart(by_name, {w for w, _, _ in words}, toks), toks)
    ids = {m.doc_id for m in found}
    return sorted(found + [m for m in by_name if m.doc_id not in ids], key=lambda m: m.start)


def _tell_apart(mentions: list[Mention], words: set, toks: dict) -> list[Mention]:
    """Of several documents a name fits, the ones the message's years or "old"/"new" words point at (names without a
    year are not judged by years); with both an old and a new word, the older one stands where its word stands."""
    if len(mentions) < 2:
        return mentions
    years = {t for t in words if t.isdigit() and len(t) == 4}
    if years:
        kept = [m for m in mentions if not _year(toks[m.doc_id]) or years & set(toks[m.doc_id])]
        return kept if any(_year(toks[m.doc_id]) for m in kept) else mentions
    order = sorted(mentions, key=lambda m: (_year(toks[m.doc_id]), int(m.doc_id[3:])))
    old, new = words & OLD, words & NEW
    if old and not new:
        return order[:1]
    if new and not old:
        return order[-1:]
    return order


def _old_and_new(text: str, mentions: list[Mention], toks: dict) -> list[Mention]:
    """"the newer guide with the older one": two documents of one name, each placed where its word stands."""
    if len(mentions) != 2:
        return mentions
    old = re.search(r"\b(?:" + "|".join(OLD) + r")\b", text, re.I)
    new = re.search(r"\b(?:" + "|".join(NEW) + r")\b", text, re.I)
    if not (old and new):
        return mentions
    older, newer = sorted(mentions, key=lambda m: (_year(toks[m.doc_id]), int(m.doc_id[3:])))
    older.start, older.end, newer.start, newer.end = old.start(), old.end(), new.start(), new.end()
    return mentions


def paths(text: str, documents: list[tuple[str, str]] = ()) -> list[Mention]:
    """Paths the message names: a quoted name with a slash or a file type, or a word with a slash, a leading ``~``
    or a supported file type ("./notes", "~/a.pdf", "runbook.md"); a bare name of an indexed document that is not a
    file here is the document, not a path. Trailing punctuation is not part of a path."""
    names = {n.lower() for _, n in documents}
    out = []
    for m in TOKEN_RE.finditer(text):
        raw = m.group(0)
        quoted = raw[:1] in "\"'"
        word = raw[1:-1] if quoted else raw.rstrip(".,;:!?)").lstrip("(")
        if not word or "://" in word:
            continue
        suffix = Path(word).suffix.lower() in SUPPORTED
        if not (suffix or word.startswith(("~", "/", "./", "../")) or (quoted and "/" in word)):
            continue
        start = m.start() + raw.index(word[:1])
        exists = _exists(word)
        if word.lower() in names and not exists:
            continue
        out.append(Mention(word, start, start + len(word), exists=exists))
    return out


def _exists(word: str) -> bool:
    try:
        return Path(word).expanduser().exists()
    except (OSError, ValueError, RuntimeError):  # a name too long, a NUL, "~user" unknown
        return False


VOCABULARY = frozenset(w for texts in EXAMPLES.values() for t in texts for w in re.findall(r"[a-z]{5,}", t.lower()))


def respelled(text: str) -> str:
    """The message with each word the examples lack but have with two neighbouring letters swapped (6 letters or more:
    "remvoe") or one letter more, not the first (7 or more: "sttings", "statistcs"), written as the examples write
    it. Shorter words are left alone: too many real words are one letter off ("three", "older", "serve")."""
    def fix(m):
        w = m.group(0)
        low = w.lower()
        if low in VOCABULARY:
            return w
        swaps = {low[:i] + low[i + 1] + low[i] + low[i + 2:] for i in range(len(low) - 1)} if len(low) >= 6 else set()
        more = ({low[:i] + c + low[i:] for i in range(1, len(low) + 1) for c in "abcdefghijklmnopqrstuvwxyz"}
                if len(low) >= 7 else set())
        hits = sorted((swaps | more) & VOCABULARY)
        return hits[0] if len(hits) == 1 else w
    return re.sub(r"[A-Za-z]{6,}", fix, text)


def masked(text: str, mentions: list[Mention]) -> str:
    """The message with each path as ``FILE`` and each document it names (by id or by name) as ``DOC``."""
    out, at = [], 0
    for m in sorted(mentions, key=lambda m: m.start):
        if m.start < at:
            continue
        out.append(text[at:m.start])
        out.append("FILE" if m.doc_id is None else "DOC")
        at = m.end
    return "".join(out) + text[at:]


# the words that tell a request from a question, read as features beside the message's vector (masked text)
_ASK = (r"^\s*(?:(?:please|pls|ok|now|hey)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?|"
        r"i\s+(?:want|need|would like)\s+(?:you\s+)?(?:to\s+)?|let'?s\s+)*")
CUES = {
    "question_shape": QUESTION_SHAPE.pattern,
    "how_to": r"\bhow\s+(?:do|can|should|would|to)\b|\bsteps?\s+to\b|\bshow\s+me\s+how\b|\bexplain\b|\bdescribe\b"
              r"|\bprocedure\b",
    "you": r"\b(?:you|your|yourself)\b",
    "library": r"\b(?:library|indexed|index|documents?|docs|files?|manuals?|guides?|sources?|catalog(?:ue)?|store|chunks?)\b",
    "path": r"\bFILE\b",
    "doc_id": r"\bDOC\b",
    "verb_first": _ASK + r"(?:list|show|display|index|add|ingest|load|import|remove|delete|drop|forget|compare|diff|"
                  r"pre-?heat|warm|pre-?compute|summari[sz]e|give|find|get|retrieve|pull|print|count|erase|purge)\b",
    "settings": r"\b(?:settings?|config\w*|model|embedder|reranker|llm|backend|options?)\b",
    "stats": r"\b(?:stats|statistics|how many|how big|how large|size|count|usage|numbers)\b",
    "help": r"\b(?:help|commands?|usage|features?|what can you)\b",
    "passages": r"\b(?:passages?|excerpts?|sections?|separate|non-overlapping|distinct|snippets?|places|nested)\b",
    "compare": r"\b(?:compare|comparison|diff|differ\w*|changed?|changes|versus|vs\.?|side by side)\b",
    "summaries": r"\b(?:summar\w+|pre-?heat|warm|pre-?compute|cache)\b",
}
_CUES = [re.compile(p, re.I) for p in CUES.values()]
CUE_WEIGHT, L2, STEPS, RATE = 0.5, 1e-4, 800, 0.5  # chosen by leave-one-out on the examples (a probe of weights 0-2,
                                                    # L2 1e-4-1e-2); tests/test_intent.py checks the result holds


def cues(text: str) -> np.ndarray:
    return np.array([CUE_WEIGHT if p.search(text) else 0.0 for p in _CUES], dtype=np.float32)


def _features(vectors: np.ndarray, texts: list[str]) -> np.ndarray:
    return np.hstack([vectors, np.array([cues(t) for t in texts]), np.ones((len(texts), 1), dtype=np.float32)])


def fit(x: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    """Softmax regression by plain gradient descent (deterministic: zeros to start, fixed steps)."""
    w = np.zeros((x.shape[1], n), dtype=np.float32)
    truth = np.eye(n, dtype=np.float32)[y]
    for _ in range(STEPS):
        w -= RATE * (x.T @ (softmax(x @ w) - truth) / len(x) + L2 * w)
    return w


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


class Examples:
    """A classifier of masked messages fitted on ``intent_examples`` (their vectors and cue words), once per
    embedder (about 1 s: embedding the examples, then 50 ms of fitting)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray]):
        self.readings = list(EXAMPLES)
        self.texts = [t for texts in EXAMPLES.values() for t in texts]
        self.y = np.array([self.readings.index(a) for a, texts in EXAMPLES.items() for _ in texts])
        self.x = _features(np.asarray(embed(self.texts), dtype=np.float32), self.texts)
        self.w = fit(self.x, self.y, len(self.readings))

    def scores(self, vec: np.ndarray, text: str) -> dict[str, float]:
        """Each reading's probability, best first."""
        p = softmax(_features(vec[None, :], [text]) @ self.w)[0]
        return dict(sorted(zip(self.readings, map(float, p)), key=lambda kv: -kv[1]))


class Recogniser:
    """``embed(texts)``: L2-normalised vectors (the query embedder); ``documents()``: (doc_id, file name) pairs;
    ``invoke_json(messages, schema, max_tokens)``: the model's constrained call, or None (no model: a close call
    that would change the library is a question)."""

    def __init__(self, embed: Callable, documents: Callable[[], list], invoke_json: Callable | None = None,
                 examples: Examples | None = None):
        self.embed = embed
        self.documents = documents
        self.invoke_json = invoke_json
        self.examples = examples or Examples(embed)

    def recognise(self, text: str) -> Intent:
        t0 = time.perf_counter()
        docs = self.documents()
        intent = self._two_part(text, docs) or self._one(text, docs)
        intent.ms = round((time.perf_counter() - t0) * 1000, 1)
        return intent

    def _two_part(self, text: str, docs) -> Intent | None:
        """"index FILE and tell me how to X": the request before the question, when the words before it are a
        whole request on their own (one that acts on the library or a document, nothing missing) and a question of
        three words or more follows."""
        for m in THEN_RE.finditer(text):
            if m.start() == 0 or len(text[m.end():].split()) < 3 or QUESTION_SHAPE.match(text):
                continue
            first = self._one(text[:m.start()], docs)
            if first.action not in (QUESTION, "nested_retrieve", *VIEWS) and not first.missing:
                first.then = text[m.end():].strip()
                return first
        return None

    def _one(self, text: str, docs) -> Intent:
        found_paths, named = paths(text, docs), named_documents(text, docs)
        plain = respelled(masked(text, found_paths + named))
        every = self.examples.scores(np.asarray(self.embed([plain]), dtype=np.float32)[0], plain)
        scores = {k: v for k, v in every.items() if has_object(k, text, found_paths, named)}  # what it names
        (top, s1), (second, s2) = list(scores.items())[:2]
        if top != next(iter(every)) and s1 < ALONE:  # the best reading was dropped: a weak one left is no request
            top, second, s1, s2 = QUESTION, top, 1.0, s1
        shown = {k: round(v, 3) for k, v in list(every.items())[:3]}
        asked = False
        if top in CHANGES and QUESTION_SHAPE.match(text):  # "how do I add FILE to my PATH?": never a change
            top = QUESTION
        elif s1 - s2 < MARGIN and top != QUESTION:
            choice = self._ask_model(text, [top, second])
            asked = choice is not None
            top = choice if asked else _without_model(top, second, text)
        if top == QUESTION:
            return Intent(QUESTION, scores=shown, asked_model=asked)
        args, missing = arguments(top, text, found_paths, named, docs)
        if top in CHANGES and _two_changes(text, found_paths):
            missing = ("one change at a time: this message asks to index and to remove; ask for each on its own "
                       "(nothing was done)")
        return Intent(top, args, missing=missing, scores=shown, asked_model=asked)

    def _ask_model(self, text: str, readings: list[str]) -> str | None:
        """The model's pick among the close readings and "question"; None without a model or a usable reply."""
        if self.invoke_json is None:
            return None
        from langchain_core.messages import HumanMessage

        options = list(dict.fromkeys(readings + [QUESTION]))
        prompt = INTENT_PROMPT.format(text=text[:500], options="\n".join(f"- {o}: {MEANINGS[o]}" for o in options))
        schema = {"type": "object", "properties": {"action": {"enum": options}}, "required": ["action"]}
        try:
            got = self.invoke_json([HumanMessage(prompt)], schema, 12).get("action")
        except (ThreadRagError, ValueError):  # the model failed or replied unusably
            return None
        return got if got in options else None


# what a request acts on, named in its words when not by a path or a document: without it the message is about the
# documents' content ("compare GRUB and systemd-boot", "give me the command to restart the widget service")
LIBRARY_WORDS = re.compile(r"\b(?:documents?|docs?|files?|folders?|directory|manuals?|guides?|pdfs?|library|handbook)\b",
                           re.I)
# what may follow the path of a file to index: where it goes, and politeness ("./a.md to my library, please")
_PLACE = (r"(?:to|into|in)\s+(?:the\s+|my\s+|your\s+)?(?:library|index|documents|docs|collection|knowledge\s+base|store|"
          r"catalog(?:ue)?)\b")
INDEX_TAIL = re.compile(r"^\W*(?:(?:and\s+)?(?:add|put|index|load)\s+(?:it|them)\s+)?(?:" + _PLACE + r")?"
                        r"(?:\W*(?:please|pls|for\s+me|thanks|thank\s+you|now|"
                        r"too|as\s+well|so\s+(?:that\s+)?(?:I|we)\s+can\s+(?:ask|search|query|read)\b.*))*\W*$", re.I)
# a request to index that starts the message ("would you mind indexing ./a.md", "read in everything under ./notes")
INDEX_ASKED = re.compile(_ASK + r"(?:would\s+you\s+mind\s+)?(?:please\s+)?(?:index|add|ingest|load|import|include|put|scan|"
                         r"learn|read\s+in|take\s+in)(?:ing)?\b|\b(?:library|index|collection|knowledge\s+base)\b", re.I)
REMOVAL = re.compile(r"\b(?:remove|delete|drop|forget|erase|purge|discard|unindex|uninstall|trash|ditch|wipe|rm|"
                     r"get\s+rid\s+of|throw\s+(?:away|out)|take\s+.{1,60}?\s+out)\b", re.I)
NEGATION = re.compile(r"\b(?:don'?t|do\s+not|never|not|no\s+need\s+to)\s+(?:\w+\s+){0,2}$", re.I)  # just before the verb
VERSIONS = re.compile(r"\b(?:versions|editions|documents|docs|manuals|guides|both|two|old and (?:the )?new)\b", re.I)
PASSAGES = re.compile(r"\b(?:passages|excerpts|sections|parts|places|snippets|quotes|bits|pieces|chunks|separate|"
                      r"non-overlapping|distinct|nested|several|multiple)\b", re.I)


PREHEAT = re.compile(r"\b(?:summaries|pre-?heat\w*|warm\w*|caches?|cached|pre-?comput\w*|ahead|advance|beforehand)\b"
                     r"|\b(?:every|each|all)\s+(?:the\s+)?summary\b|\bbefore\s+I\b", re.I)
# a view of the library is never "in the onboarding policy", "the phone's settings", "described in the manual"
CONTENT_SCOPE = re.compile(r"\b(?:in|from|per|of|under)\s+(?:the|this|that|my|our)\s+(?:[\w-]+\s+){0,3}?(?:manual|guide|"
                           r"report|policy|handbook|contract|lease|agreement|leaflet|spec\w*|datasheet|document)\b"
                           r"|\b(?:described|listed|mentioned|given|shown)\s+in\b|\bthe\s+[\w-]+'s\b", re.I)


def has_object(action: str, text: str, found_paths: list[Mention], named: list[Mention]) -> bool:
    """Whether the message names what ``action`` acts on: a path with nothing after it but where it goes (or a word
    for a file) to index; a removal verb, not negated, and a document named by its id, its file name or two words of
    its name to remove (a destructive request needs an unambiguous object, never inside a document's content); two
    documents, or words for versions, to compare; several passages for nested passages; summaries
    (plural) or ahead-of-time words to pre-heat ("a summary of X" is a question). A view (the list, settings,
    statistics) never names a document's content ("in the onboarding policy", "the phone's settings"); settings
    that name a document are the document's."""
    if action == "index_new_document":
        if found_paths:  # a request that starts the message (or names the library; or a path that exists after at
            before = text[:found_paths[0].start]  # most two words), and nothing after the path but where it goes
            asked = INDEX_ASKED.search(before) or (found_paths[0].exists and len(before.split()) <= 2)
            return bool(asked) and bool(INDEX_TAIL.match(text[found_paths[0].end:]))
        return bool(LIBRARY_WORDS.search(text))
    if action == "remove_document":
        said = respelled(text)
        verb = REMOVAL.search(said)
        if not verb or NEGATION.search(said[:verb.start()]) or CONTENT_SCOPE.search(said[verb.end():]):
            return False
        return any(m.words >= 2 for m in named) or (not named and bool(LIBRARY_WORDS.search(text)))
    if action == "compare_documents":
        return len({m.doc_id for m in named}) >= 2 or (bool(VERSIONS.search(text)) and not QUESTION_SHAPE.match(text)
                                                        and not CONTENT_SCOPE.search(text))
    if action == "nested_retrieve":
        return bool(PASSAGES.search(text))
    if action == "pre_heat_summaries":
        return bool(PREHEAT.search(text))
    if action in ("list_available_documents", "show_settings", "show_stats"):
        return not CONTENT_SCOPE.search(text) and not (action == "show_settings" and named)
    return True


def _two_changes(text: str, found_paths: list[Mention]) -> bool:
    """A message that asks both to index a path and to remove something ("index ./a.md and then delete DOC1"): doing
    one and dropping the other without a word would surprise; neither is done."""
    said = respelled(text)
    removal = REMOVAL.search(said)
    return bool(found_paths) and bool(re.search(r"\b(?:index|add|ingest|load|import)\b", said, re.I)) and \
        bool(removal) and not NEGATION.search(said[:removal.start()])


def _without_model(top: str, second: str, text: str) -> str:
    """A close call with no model to ask: a request that changes the library is a question (the safe reading); one
    that changes nothing stands, unless the message reads like a question and the question is the other reading."""
    return QUESTION if top in CHANGES or (second == QUESTION and QUESTION_SHAPE.match(text)) else top


def arguments(action: str, text: str, found_paths: list[Mention], named: list[Mention], docs) -> tuple[dict, str]:
    """The action's arguments from the message itself, and what it lacks ("" when nothing)."""
    ids = list(dict.fromkeys(m.doc_id for m in named))
    label = dict(docs)
    if action == "index_new_document":
        return ({"file_path": found_paths[0].text}, "") if found_paths else (
            {}, "which file or folder? Name its path, e.g. index ~/docs/manual.pdf")
    if action == "remove_document":
        if len(ids) == 1:
            return {"doc_id": ids[0]}, ""
        if ids:
            return {}, "which one? " + " or ".join(f"{d} ({label.get(d, '?')})" for d in ids)
        return {}, "which document? Name it or give its id (list the documents to see them)"
    if action == "pre_heat_summaries":
        return ({"serial_id": ids[0]} if len(ids) == 1 else {}), ""
    if action == "nested_retrieve":
        m = LIMIT_RE.search(text)
        n = m and (int(m.group(1)) if m.group(1).isdigit() else NUMBERS[m.group(1).lower()])
        return {"query": text, "limit": n or 3, **({"doc_id": ids[0]} if len(ids) == 1 else {})}, ""
    if action == "compare_documents":
        if len(ids) < 2:
            return {}, "which two documents? Name both, e.g. compare DOC1 and DOC2"
        a, b = [next(m for m in named if m.doc_id == d) for d in ids[:2]]
        topic = _topic(text, a, b)
        return {"doc_a": a.doc_id, "doc_b": b.doc_id, **({"topic": topic} if topic else {})}, ""
    return {}, ""


def _topic(text: str, a: Mention, b: Mention) -> str | None:
    """The topic of a comparison: after the second document ("... DOC1 and DOC2 about partitioning"), else before
    the first ("how does partitioning differ between DOC1 and DOC2")."""
    after = TOPIC_RE.search(text[max(a.end, b.end):])
    if after:
        return _a_topic(after.group(1))
    m = TOPIC_BEFORE_RE.search(text[:min(a.start, b.start)])
    if not m:
        return None
    return _a_topic(next(g for g in (m.group("subject"), m.group("object"), m.group("compared")) if g is not None))


def _a_topic(words: str) -> str | None:
    topic = re.sub(r"^(?:the|their|its)\s+", "", words.strip(), flags=re.I)
    topic = re.sub(r"[\s,]+(?:please|thanks|thank you|for me)$", "", topic, flags=re.I).strip()
    ws = re.findall(r"\w+", topic.lower())
    if not ws or all(w in _NOT_A_TOPIC for w in ws) or re.search(r"\b" + _CMP + r"\b", topic, re.I):
        return None
    return topic
