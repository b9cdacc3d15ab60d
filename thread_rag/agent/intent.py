"""Is this message a question, or an action (list, index, pre-heat, nested passages, compare two documents)?

Cheap by construction: a plain question matches none of the action patterns below and costs no LLM call.
A message that does match one gets ONE short constrained call that picks the action from an enum (the
model confirms the user asked for it; "what does the guide say about indexing?" is still a question), unless
the request is unmistakable (the whole message is "list the documents", or "index" and the path of a file of a
supported kind that exists): then no call.
Arguments come from the text itself (a path, a DOCn id, a number), never from the model's imagination,
and ``index_new_document`` / ``pre_heat_summaries`` run only after both checks agree (or the message is nothing
but the request to index one existing file).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ThreadRagError
from ..ingest.loaders import SUPPORTED_SUFFIXES as SUPPORTED

ACTIONS = ("question", "list_available_documents", "index_new_document", "pre_heat_summaries", "nested_retrieve",
           "compare_documents")

ASK = r"^\s*(?:please\s+|(?:can|could|would)\s+you\s+(?:please\s+)?)?"  # a request starts the message
PATTERNS = {
    "list_available_documents": re.compile(
        ASK + r"(?:list|show)(?:\s+me)?\s+(?:the\s+|my\s+|all\s+)?(?:indexed\s+)?(?:documents|docs|files|library)\b"
        r"|\b(?:which|what)\s+(?:documents|docs|files)\s+(?:do\s+i\s+have|are\s+(?:indexed|available|loaded|there))",
        re.I),
    "index_new_document": re.compile(
        ASK + r"(?:index|ingest|add|load|import)\b.{0,80}?(?:\S+\.(?:pdf|docx|txt|md|markdown)\b|\s[./~]\S*)", re.I),
    "pre_heat_summaries": re.compile(ASK + r"(?:pre-?heat|warm\s+up|pre-?compute)\b", re.I),
    "nested_retrieve": re.compile(
        ASK + r"(?:give|find|show|get|retrieve|fetch)\b.{0,40}\b(?:non-overlapping|separate|distinct|nested)\b", re.I),
    # two document ids and a comparison word: "what changed between DOC1 and DOC2 about partitioning?"
    "compare_documents": re.compile(
        r"\b(?:compare|comparison|diff|differences?|differs?|changed?|changes)\b.{0,60}?\bDOC[1-9][0-9]*\b.{1,40}?"
        r"\bDOC[1-9][0-9]*\b|\bDOC[1-9][0-9]*\b.{1,40}?\bDOC[1-9][0-9]*\b.{0,30}?"
        r"\b(?:compare|differ|differences?|changed?|changes)\b", re.I),
}

INTENT_PROMPT = """A user wrote to a document assistant:
"{text}"
Is this a request to run an action, or a question about the documents' content? Options:
- list_available_documents: the user wants to see which documents are indexed
- index_new_document: the user wants a file added to the library
- pre_heat_summaries: the user wants summaries computed ahead of time
- nested_retrieve: the user wants several separate, non-overlapping passages
- compare_documents: the user wants two documents (e.g. two versions of a manual) compared
- question: anything else (a question to answer from the documents)
Reply with JSON {{"action": "<option>"}}."""

PATH_RE = re.compile(r"""(?:"([^"]+)"|'([^']+)'|(\S+\.(?:pdf|docx|txt|md|markdown))\b|(\s[./~]\S*))""", re.I)
DOC_RE = re.compile(r"\bDOC([1-9][0-9]*)\b", re.I)
TOPIC_RE = re.compile(r"\b(?:about|regarding|concerning|on the topic of|in terms of|on)\s+(?:the\s+)?(.+?)"
                      r"[\s?.!]*$", re.I)
# the topic before the documents: "how does partitioning differ between DOC1 and DOC2?", "what are the
# differences in secure boot between ...", "what changed in the boot loader between ...", "compare the
# partitioning in ..." (the prefix up to the first DOCn)
_CMP = r"(?:compare|comparison|diff|differ|differs|differences?|changed?|changes|vary|varies)"
TOPIC_BEFORE_RE = re.compile(
    r"(?:\b(?:does|do|did|is|are|has|have)\s+(?:the\s+)?(?P<subject>.+?)\s+" + _CMP +
    r"|\b" + _CMP + r"\s+(?:in|about|regarding|concerning|for|to|of|on)\s+(?:the\s+)?(?P<object>.+?)"
    r"|" + ASK + r"compare\s+(?:the\s+)?(?P<compared>.+?))"
    r"\s+(?:between|in|from|across|of|for)\s+(?:the\s+)?$", re.I)
_NOT_A_TOPIC = frozenset("it they this that these those them there what which the a an".split())
# a message that is nothing but a request to list the documents: no confirmation needed
LIST_ONLY = re.compile(ASK + r"(?:list|show)(?:\s+me)?\s+(?:the\s+|my\s+|all\s+)?(?:indexed\s+)?(?:documents|docs|files|library)"
                       r"(?:\s+please)?[\s?.!]*$|^\s*(?:which|what)\s+(?:documents|docs|files)\s+(?:do\s+i\s+have|are\s+"
                       r"(?:indexed|available|loaded|there))[\s?.!]*$", re.I)
# a message that is nothing but a request to index one file: "index ./notes/runbook.md", "please add the file x.pdf"
INDEX_ONLY = re.compile(ASK + r"(?:index|ingest|add)\s+(?:the\s+)?(?:file\s+|document\s+)?(?:\"[^\"]+\"|'[^']+'|\S+)"
                        r"(?:\s+please)?[\s.!]*$", re.I)
LIMIT_RE = re.compile(r"\b([1-9]|1[0-9]|20)\s+(?:\w+\s+)?(?:passages|sections|parts|excerpts)\b", re.I)


@dataclass
class Intent:
    action: str
    args: dict


def candidate(text: str) -> str | None:
    """The action a message may ask for (pattern match only), or None for a plain question."""
    for action, pat in PATTERNS.items():
        if pat.search(text):
            return action
    return None


def arguments(action: str, text: str) -> dict:
    if action == "index_new_document":
        m = PATH_RE.search(text)
        path = next((g for g in m.groups() if g), "").strip() if m else ""
        return {"file_path": path.rstrip(".,;:!?)")} if path else {}
    if action == "pre_heat_summaries":
        m = DOC_RE.search(text)
        return {"serial_id": f"DOC{m.group(1)}"} if m else {}
    if action == "nested_retrieve":
        m = LIMIT_RE.search(text)
        d = DOC_RE.search(text)
        return {"query": text, "limit": int(m.group(1)) if m else 3, **({"doc_id": f"DOC{d.group(1)}"} if d else {})}
    if action == "compare_documents":
        found = list(DOC_RE.finditer(text))
        if len(found) < 2:
            return {}
        after = TOPIC_RE.search(text[found[1].end():])  # "... DOC1 and DOC2 about partitioning?"
        topic = after.group(1).strip() if after else _topic_before(text[:found[0].start()])
        return {"doc_a": f"DOC{found[0].group(1)}", "doc_b": f"DOC{found[1].group(1)}",
                **({"topic": topic} if topic else {})}
    return {}


def _topic_before(prefix: str) -> str | None:
    """The topic a comparison names before its first document id ("how does partitioning differ between"),
    or None ("what are the differences between", "how does it differ between")."""
    m = TOPIC_BEFORE_RE.search(prefix)
    if not m:
        return None
    topic = next(g for g in (m.group("subject"), m.group("object"), m.group("compared")) if g is not None).strip()
    words = re.findall(r"\w+", topic.lower())
    if not words or all(w in _NOT_A_TOPIC for w in words) or re.search(r"\b" + _CMP + r"\b", topic, re.I):
        return None
    return topic


def unmistakable(action: str, text: str) -> bool:
    """A request no question reads like: the whole message asks for the document list, or it is nothing but a request
    to index one existing file of a supported kind (a folder, "~", or a path inside a longer message still gets the
    model's confirmation; the tool still applies the allowed folders). The model's one-word verdict on these was
    not reliable (``index ./notes/runbook.md`` came back "question")."""
    if action == "list_available_documents":
        return bool(LIST_ONLY.match(text))
    if action == "index_new_document":
        file_path = arguments(action, text).get("file_path")  # the path the tool will be given, checked as such
        if not INDEX_ONLY.match(text) or not file_path:
            return False
        path = Path(file_path).expanduser()
        try:
            return path.suffix.lower() in SUPPORTED and path.is_file()
        except (OSError, ValueError):
            return False
    return False


def recognise(text: str, invoke_json=None) -> Intent:
    """``invoke_json(messages, schema, max_tokens)``: the constrained call, made only for a pattern match that is
    not ``unmistakable``; without it (intents off) every message is a question."""
    cand = candidate(text)
    if cand is None or invoke_json is None:
        return Intent("question", {})
    if unmistakable(cand, text):
        return Intent(cand, arguments(cand, text))
    from langchain_core.messages import HumanMessage

    schema = {"type": "object", "properties": {"action": {"enum": list(ACTIONS)}}, "required": ["action"]}
    try:
        got = invoke_json([HumanMessage(INTENT_PROMPT.format(text=text[:500]))], schema, 12).get("action")
    except (ThreadRagError, ValueError):  # the model failed or replied unusably: treat it as a question
        got = "question"
    if got != cand:  # both must agree; anything else is answered as a question
        return Intent("question", {})
    args = arguments(cand, text)
    if cand in ("index_new_document", "compare_documents") and not args:
        return Intent("question", {})
    return Intent(cand, args)
