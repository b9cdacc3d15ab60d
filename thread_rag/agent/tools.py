"""The tool layer's argument schemas (pydantic) and its one entry point for JSON arguments, ``call_tool``: the
chat's requests, scripts and the MCP server call through it.

Each tool wraps a plain function of :mod:`thread_rag.tools` (plus ``quote_answer``, the answer path's quote). ``call_tool`` is the single entry point
used by the agent loop and scripted sessions: unknown tools, wrong or missing arguments and tool
exceptions come back as error results (one line), never as crashes.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, get_args

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .. import tools as T
from ..errors import ThreadRagError, counted
from ..nested.tree import MAX_LIMIT, MAX_OFFSET
from ..retrieve.pipeline import MAX_K


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value, info):
        """true is not a number (lax validation took it as 1)."""
        kind = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and kind is not bool and bool not in get_args(kind):
            raise ValueError(f"expected {'a number' if int in (kind, *get_args(kind)) else 'text'}, not true/false")
        return value


class NoArgs(_Args):
    pass


class IndexArgs(_Args):
    file_path: str = Field(description="path of a PDF, DOCX, TXT, Markdown or HTML file (or folder) to index")


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=10000, description="what to look for, in plain words")
    doc_id: Optional[str] = Field(default=None, description="limit the search to one document, e.g. DOC1")
    k: Optional[int] = Field(default=None, ge=1, le=MAX_K, description="how many entry chunks (default: SEARCH_K)")


class FetchArgs(_Args):
    chunk_ids: list[str] = Field(min_length=1, max_length=50, description="chunk ids such as [\"DOC1_006\", \"DOC1_007\"]")
    token_budget: Optional[int] = Field(default=None, ge=1,
                                        description="token budget for all windows (default: WINDOW_TOKEN_BUDGET)")


class PreheatArgs(_Args):
    serial_id: Optional[str] = Field(default=None, description="document id such as DOC1; omit for all documents")


DOC_ID_PATTERN = r"^\s*[Dd][Oo][Cc][1-9][0-9]*\s*$"


class RemoveArgs(_Args):
    doc_id: str = Field(pattern=DOC_ID_PATTERN, description="the document's id, e.g. DOC2")


class CompareArgs(_Args):
    doc_a: str = Field(pattern=DOC_ID_PATTERN, description="the first (older) version, a document id such as DOC1")
    doc_b: str = Field(pattern=DOC_ID_PATTERN, description="the second (newer) version, another id such as DOC2")
    topic: Optional[str] = Field(default=None, min_length=1, max_length=1000,
                                 description="only the part about this topic, e.g. partitioning; omit for all")
    limit: Optional[int] = Field(default=None, ge=1, le=1000, description="list at most this many changed / only-in "
                                 "rows (same rows are counted, not listed); omit for every row")


class QuoteArgs(_Args):
    question: str = Field(min_length=1, max_length=4000, description="the question, in plain words")
    doc_id: Optional[str] = Field(default=None, description="limit to one document, e.g. DOC1")


class NestedArgs(_Args):
    query: str = Field(min_length=1, max_length=10000, description="what to look for")
    limit: int = Field(default=3, ge=1, le=MAX_LIMIT, description="how many non-overlapping passages")
    doc_id: Optional[str] = Field(default=None, description="limit to one document, e.g. DOC2")
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET, description="skip this many passages")


DESCRIPTIONS = {
    "list_available_documents": "List the indexed documents with their ids (DOC1, DOC2, ...) and chunk ranges.",
    "index_new_document": "Index a new file from disk so it can be searched. Only files the user names.",
    "rag_search": "JUMP: search the documents and get entry chunk ids with scores and a text preview.",
    "fetch_chunks_by_id": "WALK: read chunks inside their context window (previous summary, text, next summary, "
                          "and whether the topic continues). Fetch the next id to keep walking.",
    "remove_document": "Remove one indexed document from the library (only when the user asked for it and said yes).",
    "pre_heat_summaries": "Summarise every chunk of a document ahead of time (slow; only when asked).",
    "nested_retrieve": "Find several non-overlapping passages of adaptive size from the document tree.",
    "compare_documents": "Compare two versions of a document step by step: which sections are the same, changed, "
                         "or only in one version, with the changed words (optionally only about a topic).",
    "quote_answer": "ANSWER WITH QUOTES: search, walk and return the documents' own lines that answer the question "
                    "(sentences, whole steps, code blocks, table rows), verbatim, each with its chunk id and page; "
                    "refused (with related lines) when no line answers. No language model is called.",
}

SCHEMAS = {"list_available_documents": NoArgs, "index_new_document": IndexArgs, "rag_search": SearchArgs,
           "fetch_chunks_by_id": FetchArgs, "remove_document": RemoveArgs, "pre_heat_summaries": PreheatArgs, "nested_retrieve": NestedArgs,
           "compare_documents": CompareArgs, "quote_answer": QuoteArgs}


def make_tools(engine, quote: Callable | None = None) -> dict[str, StructuredTool]:
    """The tools over ``engine``; ``quote_answer`` among them when ``quote(question, doc_id=None)`` is given (the
    answer path's quote, ``agent.loop.quote_answer``: it runs the agent, which is built on these tools)."""
    fns = {
        "list_available_documents": lambda: T.list_available_documents(engine),
        "index_new_document": lambda file_path: T.index_new_document(engine, file_path, restrict=True),
        "rag_search": lambda query, doc_id=None, k=None: T.rag_search(engine, query, doc_id=doc_id, k=k),
        "fetch_chunks_by_id": lambda chunk_ids, token_budget=None: T.fetch_chunks_by_id(engine, chunk_ids,
                                                                                        token_budget=token_budget),
        "remove_document": lambda doc_id: T.remove_document(engine, doc_id),
        "pre_heat_summaries": lambda serial_id=None: T.pre_heat_summaries(engine, serial_id),
        "nested_retrieve": lambda query, limit=3, doc_id=None, offset=0: T.nested_retrieve(
            engine, query, limit=limit, doc_id=doc_id, offset=offset),
        "compare_documents": lambda doc_a, doc_b, topic=None, limit=None: T.compare_documents(
            engine, doc_a, doc_b, topic=topic, limit=limit),
    }
    if quote is not None:
        fns["quote_answer"] = lambda question, doc_id=None: quote(question, doc_id=doc_id)
    return {name: StructuredTool.from_function(func=fn, name=name, description=DESCRIPTIONS[name],
                                               args_schema=SCHEMAS[name]) for name, fn in fns.items()}


@dataclass
class ToolOutcome:
    tool: str
    args: dict
    ok: bool
    result: Any
    error: str | None
    ms: float


def json_kind(value) -> str:
    """A JSON value's kind in words ("an array", "a string", ...)."""
    if isinstance(value, bool) or value is None:
        return "true/false" if value is not None else "null"
    return {list: "an array", str: "a string", dict: "an object"}.get(type(value), "a number")


def _problem(name: str, error: dict) -> str:
    """One validation error in words; an argument the tool does not take is named with those it does."""
    if error["type"] == "int_parsing_size":  # pydantic: "Unable to parse input string as an integer, exceeded ..."
        return "a number too large for a whole number"
    if error["type"] != "extra_forbidden":
        return error["msg"]
    takes = ", ".join(SCHEMAS[name].model_fields) or "none"
    return f"not an argument of {name}; it takes {takes}"


def call_tool(tools: dict, name: Any, args: Any) -> ToolOutcome:
    t0 = time.perf_counter()
    if not isinstance(name, str) or name not in tools:
        return ToolOutcome(str(name), args if isinstance(args, dict) else {}, False, None,
                           f"unknown tool {name!r}; available: {', '.join(tools)}", 0.0)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return ToolOutcome(name, {}, False, None, f"{name}: arguments must be a JSON object, not {json_kind(args)}", 0.0)
    try:
        SCHEMAS[name].model_validate(args)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'args'}: {_problem(name, e)}" for e in exc.errors()[:3])
        return ToolOutcome(name, args, False, None, f"{name}: bad arguments ({msgs})", 0.0)
    try:
        result = tools[name].invoke(args)
        return ToolOutcome(name, args, True, result, None, (time.perf_counter() - t0) * 1000)
    except ThreadRagError as exc:
        return ToolOutcome(name, args, False, None, f"{name}: {exc}", (time.perf_counter() - t0) * 1000)
    except Exception as exc:  # noqa: BLE001 - a tool bug must not crash the loop
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        return ToolOutcome(name, args, False, None, f"{name} failed: {type(exc).__name__}: {first}",
                           (time.perf_counter() - t0) * 1000)


def compare_summary(r: dict, max_rows: int = 12, max_chars: int = 6000) -> str:
    """A comparison in a few lines: the counts, then each changed / only-in row with pages and changed words."""
    a, b, c = r["doc_a"], r["doc_b"], r["counts"]
    head = (f"{a['doc_id']} ({a['label']}) vs {b['doc_id']} ({b['label']})"
            + (f", about {r['topic']!r}" if r.get("topic") else "")
            + f": same {c['same']}, changed {c['changed']}, only in {a['doc_id']} {c['only-in-A']}, "
              f"only in {b['doc_id']} {c['only-in-B']}")
    lines = [head] + ([r["note"]] if r.get("note") else [])

    def where(side):
        if not side:
            return "-"
        hp = " > ".join((side.get("heading_path") or [])[-1:])
        return f"{side['chunk_id']} {side.get('pages') or ''}".strip() + (f" ({hp})" if hp else "")

    shown = [x for x in r["rows"] if x["label"] != "same"]
    for x in shown[:max_rows]:
        if x["label"] == "changed":
            what = "; ".join([f"-{t}" for t in x.get("removed", [])[:3]] + [f"+{t}" for t in x.get("added", [])[:3]])
            lines.append(f"changed: {where(x['a'])} -> {where(x['b'])}: {what[:300]}"
                         + (f" ({x['explanation']})" if x.get("explanation") else ""))
        elif x["label"] == "only-in-A":
            lines.append(f"only in {a['doc_id']}: {where(x['a'])}: {' '.join(x['a'].get('text', '').split()[:25])}")
        else:
            lines.append(f"only in {b['doc_id']}: {where(x['b'])}: {' '.join(x['b'].get('text', '').split()[:25])}")
    if len(shown) > max_rows:
        lines.append(f"... {len(shown) - max_rows} more changed or one-sided passages")
    return "\n".join(lines)[:max_chars]


def describe_outcome(outcome: ToolOutcome) -> str:
    """An action's result as a few lines for the person who asked for it."""
    if not outcome.ok:
        return f"error: {outcome.error}"
    r = outcome.result
    if outcome.tool == "list_available_documents":
        docs = r["documents"]
        if not docs:
            return "No documents are indexed yet."
        return "\n".join(f"{d['doc_id']}  {d['label']}  ({counted(d['chunks'], 'chunk')}, {d['first_chunk']}..{d['last_chunk']})"
                         for d in docs)
    if outcome.tool == "index_new_document":
        from ..render import index_line

        return "\n".join(index_line(x) + "".join(f"\n  warning: {w}" for w in x.get("warnings") or [])
                         for x in r["results"])
    if outcome.tool == "remove_document":
        return f"removed {r['removed']} ({r['name']}, {counted(r['chunks'], 'chunk')})"
    if outcome.tool == "pre_heat_summaries":
        return f"summaries made {r['made']}, already cached {r['cached']}, failed {r['failed']}"
    if outcome.tool == "compare_documents":
        return compare_summary(r)
    if outcome.tool == "quote_answer":  # the outcome's line, then the quoted (or related) lines
        from ..render import quote_block
        from .quote import QuoteLine

        said = (r.get("outcome") or {}).get("line")
        head = [said or r["answer"]] if r["refused"] or said else []
        return "\n".join(head + [t.plain for t in quote_block([QuoteLine(**x) for x in r["quote"]],
                                                                related=r["related"])])
    return json.dumps(r, ensure_ascii=False)[:6000]


def result_errors(name: str, result) -> list[str]:
    """What failed inside a tool's successful call: fetch's unreadable ids, index's failed files, pre-heat's failed
    summaries (the rest of the result stands). The script and the MCP server read partial failures here (a failed
    script line; an MCP tool error when nothing else came back); the CLI's commands exit 1 on the same cases."""
    if not isinstance(result, dict):
        return []
    if name == "fetch_chunks_by_id":
        return [str(e["error"]) for e in result.get("errors") or []]
    if name == "index_new_document":
        return [str(x["error"]) for x in result.get("results") or [] if x.get("status") == "failed"]
    if name == "pre_heat_summaries" and result.get("failed"):  # its errors also carry cache warnings
        return [str(e) for e in result.get("errors") or []] or [f"{result['failed']} summaries failed"]
    return []
