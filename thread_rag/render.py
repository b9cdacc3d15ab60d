"""Rich rendering shared by the CLI and the REPL."""
from __future__ import annotations

import contextlib

from rich.console import Console
from rich.text import Text

from .errors import ChunkIdError, counted, shown
from .ids import ChunkId
from .records import pages_label


def make_console(stderr: bool = False) -> Console:
    """The console of the CLI and the chat: on a terminal rich wraps long lines; into a pipe or file a printed line
    stays one line (an index result and its path are not wrapped at 80 columns). Asked of the file itself: rich's
    ``is_terminal`` says yes in a pipe when FORCE_COLOR is set. A printed string is never read as style markup or
    emoji codes (documents, names and questions hold "[/etc]", "[server]", ":warning:"): styles are given as Text."""
    console = Console(stderr=stderr, markup=False, emoji=False)
    console.soft_wrap = not _isatty(console)
    return console


def styled(*parts) -> Text:
    """One line from plain strings and ``(text, style)`` pairs, shown as written on any console."""
    return Text.assemble(*parts)


def _isatty(console: Console) -> bool:
    try:
        return console.file.isatty()
    except (AttributeError, ValueError, OSError):
        return False


@contextlib.contextmanager
def progress_bar(console: Console, disable: bool = False):
    """Yield ``update(label, done, total)``; a rich progress bar with ETA on a terminal unless disabled."""
    if disable or not _isatty(console):  # into a pipe or file a transient bar only leaves a blank line
        yield lambda label, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True,
                  redirect_stderr=_isatty(Console(stderr=True))) as prog:  # stderr into a file stays there
        task = prog.add_task("", total=1)

        def update(label: str, done: int, total: int) -> None:
            prog.update(task, description=label, completed=done, total=max(total, 1))

        yield update


def snippet(text: str, width: int = 240) -> str:
    """A hit's text on one line: line breaks and indentation runs as single spaces, cut to ``width``."""
    return " ".join(text.split())[:width]


def render_search(out: Console, res: dict) -> None:
    if not res["hits"]:
        out.print(styled("no results" + (f": {res['note']}" if res.get("note") else "")))
    for h in res["hits"]:
        pages = f" {pages_label(h.get('page_start'), h.get('page_end'))}" if h.get("page_start") else ""
        out.print(styled((h["chunk_id"], "bold"), f"{pages}  {h['score']:.3f}  ",
                         (" > ".join(h.get("heading_path") or []), "dim")))
        out.print(styled("   " + snippet(h["text"])))
    if not res.get("stages_run"):  # nothing was searched (an empty library)
        return
    t = res.get("timings_ms", {})
    out.print(styled((f"stages {', '.join(res.get('stages_run', []))}; early exit {res.get('early_exit')}; "
                      f"{sum(t.values()):.0f} ms", "dim")))


def file_named(path: str, same_as: str | None = None, moved_from: str | None = None) -> str:
    """An indexed file on a result line: quoted if its name breaks the line; a copy names the file indexed, a moved
    file the path it had."""
    if moved_from:
        return shown(path) + f" (moved from {shown(moved_from)})"
    return shown(path) + (f" (same content as {shown(same_as)})" if same_as else "")


def index_line(r: dict) -> str:
    """One file's index result for a person: ``indexed DOC3 (42 chunks) path``, or ``error: ...``."""
    if r["status"] == "failed":
        return f"error: {r['error']}"
    return f"{r['status']} {r['doc_id']} ({counted(r['chunks'], 'chunk')}) {file_named(r['path'], r.get('same_as'), r.get('moved_from'))}"


def _is_chunk_id(text: str) -> bool:
    try:
        ChunkId.parse(text)
        return True
    except ChunkIdError:
        return False


def stats_line(stats: dict) -> str:
    """``tools.library_stats`` in one line (``thread-rag stats``, ``/stats``, the chat's "how many chunks ...?")."""
    return f"{counted(stats['documents'], 'document')}, {counted(stats['chunks'], 'chunk')}, data dir {stats['home']}"


def preheat_notes(res: dict) -> list[str]:
    """A pre-heat's failures, each reason once with the first chunk it failed on (``error: DOC1_000: ...``), and
    its summary cache's warnings (``warning: ...``)."""
    said, lines = set(), []
    for e in res.get("errors") or []:
        chunk, _, reason = e.partition(": ")
        if not _is_chunk_id(chunk):
            lines.append(f"warning: {e}")
        elif reason not in said:
            said.add(reason)
            lines.append(f"error: {e}")
    return lines


def render_windows(out: Console, res: dict, err: Console | None = None) -> None:
    """The windows on ``out``; each chunk id that failed as one ``error:`` line on ``err`` (default ``out``); the
    error names its id already. What the windows lack (a summarizer down) is a ``warning:`` line there."""
    for w in res.get("windows", []):
        out.print(styled(w["rendered"]))
        out.print()
    for note in res.get("notes", []):
        (err or out).print(styled((f"warning: {note}", "yellow")))
    for e in res.get("errors", []):
        (err or out).print(styled((f"error: {e['error']}", "red")))


def render_nested(out: Console, res: dict) -> None:
    if not res.get("hits"):
        out.print(styled("no results"))
    for h in res.get("hits", []):
        out.print(styled((h["node_id"], "bold"), f" level {h['level']} {h['score']:.3f} covers "
                         f"{h['chunk_ids'][0]}..{h['chunk_ids'][-1]}  {h.get('pages_label', '')}"))
        out.print(styled("   " + snippet(h["text"])))


def answer_notes(ans, settings) -> list[str]:
    """What a person should know about how an answer ended (printed after it, dim)."""
    notes = []
    if getattr(ans, "note", ""):
        notes.append(f"({ans.note})")
    if getattr(ans, "cut", False):
        notes.append(f"(the answer stopped at a token limit: MAX_ANSWER_TOKENS = {settings.MAX_ANSWER_TOKENS}, or the "
                     f"model's context)")
    match = getattr(ans, "match", None)
    if settings.weak_match(match) and not ans.refused:
        notes.append(f"(the documents match this question weakly: the cross-encoder gives its best source {match:.3f}, "
                     f"under MATCH_MIN = {settings.MATCH_MIN:g}; they may not answer it)")
    missing = [w for x in getattr(ans, "unsupported", None) or [] for w in x.get("missing") or [x.get("text")]]
    if missing and not ans.refused:
        notes.append("(not in the sources: " + ", ".join(f"`{w}`" for w in dict.fromkeys(missing)) +
                     "; marked [?]: check them before you use them)")
    computed = getattr(ans, "computed", None)
    if computed and not ans.refused:
        notes.append("(worked out from the sources' figures, not printed in them: " + "; ".join(computed) + ")")
    dropped = getattr(ans, "dropped", None)
    if dropped and not ans.refused:
        notes.append(f"(left out: {counted(len(dropped), 'sentence')} with a command, path or option not in the sources: "
                     + ", ".join(f"`{w}`" for d in dropped for w in d.get("missing", [])) + ")")
    unmentioned = getattr(ans, "unmentioned", None)
    if unmentioned and not ans.refused:
        notes.append(f"(the documents never use the word{'' if len(unmentioned) == 1 else 's'} "
                     f"{', '.join(repr(t) for t in unmentioned)}: what the answer says about "
                     f"{'it' if len(unmentioned) == 1 else 'them'} may not come from them)")
    return notes


def quote_block(lines: list, related: bool = False) -> list[Text]:
    """The quote as a person reads it: a title, then each source's lines under ``[n] DOC1_099 name p.28``, verbatim
    (prose on one line, code, steps and table rows as their lines), indented. ``related``: the nearest lines of a
    question the documents do not answer."""
    if not lines:
        return []
    out = [styled(("related passages, not an answer:" if related else "from the manual (quoted):", "bold"))]
    where = None
    for prev, x in zip([None] + list(lines), lines):
        here = (x.source, x.chunk_id)
        if here != where:
            out.append(styled((f"[{x.source}] ", "bold"), (f"{x.chunk_id} {shown(x.doc_name)} {x.pages}".strip(), "dim")))
            where = here
        for line in x.shown(prev).splitlines():
            out.append(styled(("    " + line, "dim" if related else "")))
    return out


def marked_text(text: str) -> Text:
    """Explanation text with its ``[?]`` marks (spans the sources do not hold) in red."""
    from .agent.check import CheckedStream

    mark = CheckedStream.MARK
    parts = []
    for i, piece in enumerate(text.split(mark)):
        if i:
            parts.append((mark, "bold red"))
        parts.append(piece)
    return styled(*parts)


def sources_line(ans) -> str:
    """An answer's citations for a person: ``[1] DOC1_052 install.en.pdf p.19; ...``; ``(matched)`` marks a
    source matched by similarity after the answer, ``(named after)`` one the model named when asked."""
    mark = {"matched": " (matched)", "sources_call": " (named after)"}
    return "; ".join((f"[{x.source}] " if x.source else "") + f"{x.chunk_id} {shown(x.doc_name)} {x.pages}".strip()
                     + mark.get(x.how, "") for x in ans.citations)
