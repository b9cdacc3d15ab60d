"""Rich rendering shared by the CLI and the REPL."""
from __future__ import annotations

import contextlib

from rich.console import Console


@contextlib.contextmanager
def progress_bar(console: Console, disable: bool = False):
    """Yield ``update(label, done, total)``; a rich progress bar with ETA unless disabled."""
    if disable:
        yield lambda label, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True) as prog:
        task = prog.add_task("", total=1)

        def update(label: str, done: int, total: int) -> None:
            prog.update(task, description=label, completed=done, total=max(total, 1))

        yield update


def render_search(out: Console, res: dict) -> None:
    if not res["hits"]:
        out.print("no results")
    for h in res["hits"]:
        pages = f" p.{h['page_start']}" if h.get("page_start") else ""
        out.print(f"[bold]{h['chunk_id']}[/bold]{pages}  {h['score']:.3f}  [dim]{' > '.join(h.get('heading_path') or [])}[/dim]")
        out.print("   " + h["text"][:240].replace("\n", " "), markup=False, highlight=False)
    t = res.get("timings_ms", {})
    out.print(f"[dim]stages {', '.join(res.get('stages_run', []))}; early exit {res.get('early_exit')}; "
              f"{sum(t.values()):.0f} ms[/dim]")


def render_windows(out: Console, res: dict) -> None:
    for w in res.get("windows", []):
        out.print(w["rendered"], markup=False, highlight=False)
        out.print()
    for e in res.get("errors", []):
        out.print(f"[red]{e['chunk_id']}: {e['error']}[/red]")


def render_nested(out: Console, res: dict) -> None:
    for h in res.get("hits", []):
        out.print(f"[bold]{h['node_id']}[/bold] level {h['level']} {h['score']:.3f} covers "
                  f"{h['chunk_ids'][0]}..{h['chunk_ids'][-1]}  {h.get('pages_label', '')}")
        out.print("   " + h["text"][:240].replace("\n", " "), markup=False, highlight=False)


def sources_line(ans) -> str:
    """An answer's citations for a person: ``[1] DOC1_052 install.en.pdf p.19; ...``; ``(matched)`` marks a
    source matched by similarity after the answer, ``(named after)`` one the model named when asked."""
    mark = {"matched": " (matched)", "sources_call": " (named after)"}
    return "; ".join((f"[{x.source}] " if x.source else "") + f"{x.chunk_id} {x.doc_name} {x.pages}".strip()
                     + mark.get(x.how, "") for x in ans.citations)
