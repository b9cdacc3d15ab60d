"""What the chat does for a request the recogniser found (``intent``): the tool it calls through the one tool layer,
or the view it shows (help, settings, statistics), and the lines it says. Nothing here answers a question.

A request that lacks what it needs names what is missing and does nothing; removal is done only after ``confirm``
says yes (the chat asks; a door with no one to ask removes nothing and says how to); a door that never changes the
library (the HTTP ``/query``) gets a line saying where to do it instead.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from .. import tools as T
from ..errors import ThreadRagError
from .intent import CHANGES, MEANINGS, Intent
from .tools import call_tool, describe_outcome

# what the chat understands, one example each (``/help`` and the "help" request show it)
HELP = [
    ("ask about your documents", "how do I reset the database?"),
    ("list the documents", "which documents can you answer from?"),
    ("index a file or a folder", "add ~/manuals/router.pdf"),
    ("remove a document (asks first)", "remove the 2022 install guide"),
    ("pre-heat summaries", "prepare the summaries for DOC1 ahead of time"),
    ("several separate passages", "give me 4 separate passages about backups"),
    ("compare two documents", "compare the 2022 and 2024 guides on partitioning"),
    ("show the settings", "which model are you using?"),
    ("show the library's statistics", "how many chunks are indexed?"),
    ("two things at once", "index ~/notes/pump.md and tell me how to prime the pump"),
]
ELSEWHERE = {"index_new_document": "POST /upload on a server started with --allow-writes, or thread-rag index",
             "remove_document": "DELETE /documents/{id} on a server started with --allow-writes, or thread-rag delete",
             "pre_heat_summaries": "thread-rag preheat"}
MODELS = ("MAIN_MODEL", "CHAT_BACKEND", "EMBEDDER_MODEL", "RERANKER", "ANSWER_MODE")
SHOWN_SETTINGS = ("MAIN_MODEL", "CHAT_BACKEND", "OLLAMA_HOST", "EMBEDDER_MODEL", "RERANKER", "ANSWER_MODE", "HOME",
                  "ALLOWED_ROOTS")


@dataclass
class Done:
    text: str    # what the person is told
    entry: dict  # the tool trace entry (``tool``: the action; ``ok`` False when nothing was done)


def help_text(footer: str = "\n(/help lists the slash commands too)") -> str:
    width = max(len(what) for what, _ in HELP)
    return "You can ask me in your own words:\n" + "\n".join(f"  {what:<{width}}  e.g. {ex}" for what, ex in HELP) + \
        footer


def settings_text(settings, only: tuple | None = None) -> str:
    """The models and folders in use, then every setting moved from its default (``thread-rag settings``: all);
    ``only``: just these settings."""
    from ..settings import describe_settings

    rows = describe_settings(settings)
    shown = [r for r in rows if (r["name"] in only if only is not None else
                                 r["name"] in SHOWN_SETTINGS or r["source"] != "default")]
    return "\n".join(f"{r['name']:<22} {r['value']!r}" + ("" if r["source"] == "default" else f"  ({r['source']})")
                     for r in shown) + "\n(every setting: thread-rag settings)"


def act(intent: Intent, tools: dict, engine, *, confirm: Callable[[str], bool] | None, changes: bool) -> Done:
    """Carry out ``intent`` (an action, not a question)."""
    t0, action = time.perf_counter(), intent.action

    def done(text: str, ok: bool = True, error: str | None = None) -> Done:
        return Done(text, {"step": 0, "tool": action, "args": intent.args, "ok": ok, "error": error,
                           "ms": round((time.perf_counter() - t0) * 1000, 1)})

    if intent.missing:
        return done(f"To {MEANINGS[action]}: {intent.missing}.", ok=False, error=intent.missing)
    if action in CHANGES and not changes:
        return done(f"Not done: asking here never changes the library (to {MEANINGS[action]}: {ELSEWHERE[action]}).",
                    ok=False, error="this door does not change the library")
    if action == "help":
        return done(help_text())
    if action == "show_settings":  # a door that changes nothing (HTTP) names the models, not the paths and hosts
        return done(settings_text(engine.settings, only=None if changes else MODELS))
    if action == "show_stats":
        from ..render import stats_line

        return done(stats_line(T.library_stats(engine)))
    if action == "remove_document":
        doc_id = intent.args["doc_id"]
        try:
            rec = engine.document(doc_id)
        except ThreadRagError as exc:  # named, never removed: nobody is asked about a document that is not there
            return done(f"error: {exc}", ok=False, error=str(exc))
        asked = f"Remove {rec.doc_id} ({rec.name}, {rec.chunk_count} chunks) from the library? [y/N] "
        if confirm is None or not confirm(asked):
            return done(f"Not removed: {doc_id} stays (to remove it: /delete {doc_id}, or thread-rag delete {doc_id}).",
                        ok=False, error="not confirmed")
    outcome = call_tool(tools, action, intent.args)
    return done(describe_outcome(outcome), ok=outcome.ok, error=outcome.error)
