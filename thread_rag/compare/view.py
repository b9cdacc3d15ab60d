"""The side-by-side terminal view of a comparison (rich): version A on the left, version B on the right.

Words found only in A are red, words found only in B green (the word-level diff); runs of ``same`` rows
fold into one line each; long chunk texts show the changed words with a few words of context around them.
"""
from __future__ import annotations

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..errors import counted
from ..records import pages_label
from .labels import tokens

LABEL_STYLE = {"same": "dim", "changed": "yellow", "only-in-A": "red", "only-in-B": "green"}
CONTEXT_WORDS = 10
MAX_WORDS = 70


def _where(side: dict | None) -> Text:
    if side is None:
        return Text("")
    t = Text(side["chunk_id"], style="bold")
    if side.get("pages"):
        t.append(f" {side['pages']}")
    if side.get("heading_path"):
        t.append("  " + " > ".join(side["heading_path"][-2:]), style="dim")
    return t


def _span_label(rows: list[dict], key: str) -> str:
    ids = [r[key]["chunk_id"] for r in rows if r.get(key)]
    if not ids:
        return "-"
    pages = [r[key] for r in rows if r.get(key) and r[key].get("page_start") is not None]
    first, last = ids[0], ids[-1]
    label = first if first == last else f"{first}..{last.rsplit('_', 1)[1]}"
    if pages:
        lo = min(p["page_start"] for p in pages)
        hi = max(p.get("page_end") or p["page_start"] for p in pages)
        label += f"  {pages_label(lo, hi)}"
    return label


def highlighted(text: str, unmatched: list | None, style: str, max_words: int = MAX_WORDS) -> Text:
    """The chunk's words with the unmatched ones styled; long texts keep the context around changes."""
    toks = tokens(text)
    bad = set(unmatched or [])
    if len(toks) <= max_words:
        keep = set(range(len(toks)))
    elif bad:
        keep = {k for b in bad for k in range(b - CONTEXT_WORDS, b + CONTEXT_WORDS + 1) if 0 <= k < len(toks)}
        if len(keep) > max_words * 2:
            keep = set(sorted(keep)[:max_words * 2])
    else:
        keep = set(range(max_words))
    out = Text()
    prev = -1
    for k in sorted(keep):
        if k != prev + 1:
            out.append(" … " if out else "… ", style="dim")
        elif out:
            out.append(" ")
        out.append(toks[k], style=style if k in bad else "")
        prev = k
    if prev < len(toks) - 1:
        out.append(" …", style="dim")
    return out


def _cell(row: dict, key: str, doc: str) -> Group | Text:
    side = row.get(key)
    if side is None:
        moved = row.get("moved_to") or row.get("moved_from")
        msg = f"(not here: moved, same text at {moved})" if moved else f"(not in {doc})"
        return Text(msg, style="dim italic")
    parts: list = [_where(side)]
    merged = row.get("merged")
    if merged and merged != key:
        parts.append(Text(f"(the {'A' if merged == 'a' else 'B'} chunk beside it has no counterpart of its own: "
                          f"it was compared with this one and its neighbours; the versions are cut at other places)",
                          style="dim italic"))
    if side.get("text") is not None:
        style = "bold red" if key == "a" else "bold green"
        if row["label"] in ("only-in-A", "only-in-B"):
            parts.append(highlighted(side["text"], None, "", max_words=40))
        else:
            parts.append(highlighted(side["text"], row.get("unmatched_" + key), style))
    return Group(*parts)


def _outside(n: int) -> Text:
    return Text(f"⋯ {counted(n, 'row')} outside the topic's region", style="dim")


def comparison_table(res: dict, limit: int | None = None, show_same: bool = False) -> tuple[Table, int]:
    """The two-column table; returns it and how many non-same rows were left out by ``limit`` (which counts
    changed and only-in rows: same rows, folded or with ``show_same`` one by one, are shown between them until
    the limit is reached)."""
    a, b = res["doc_a"], res["doc_b"]
    t = Table(box=box.SIMPLE_HEAD, expand=True, show_lines=True, pad_edge=False)
    t.add_column(Text(f"A  {a['doc_id']}  {a['label']}", style="bold"), ratio=1, overflow="fold")
    t.add_column(Text(f"B  {b['doc_id']}  {b['label']}", style="bold"), ratio=1, overflow="fold")
    rows = res["rows"]
    shown = left_out = 0
    k = 0
    while k < len(rows):
        r = rows[k]
        if r.get("skipped_before"):
            t.add_row(_outside(r["skipped_before"]), Text(""))
        if r.get("skipped_after") and (limit is None or shown < limit):
            after = _outside(r["skipped_after"])
        else:
            after = None
        if r["label"] == "same" and not show_same:
            run = [r]
            while k + 1 < len(rows) and rows[k + 1]["label"] == "same" and not rows[k + 1].get("skipped_before"):
                k += 1
                run.append(rows[k])
            if limit is None or shown < limit:
                t.add_row(Text(f"= same ×{len(run)}  {_span_label(run, 'a')}", style="dim"),
                          Text(_span_label(run, "b"), style="dim"))
                if rows[k].get("skipped_after"):
                    t.add_row(_outside(rows[k]["skipped_after"]), Text(""))
            k += 1
            continue
        if limit is not None and shown >= limit:
            left_out += r["label"] != "same"
            k += 1
            continue
        shown += r["label"] != "same"
        label = Text(r["label"] + (" (cut elsewhere)" if r.get("merged") else ""), style=LABEL_STYLE[r["label"]])
        cell_a = _cell(r, "a", a["doc_id"])
        cell_b = _cell(r, "b", b["doc_id"])
        extra = [Text("≈ " + r["explanation"], style="italic cyan")] if r.get("explanation") else []
        t.add_row(Group(label, cell_a), Group(Text(""), cell_b, *extra))
        if after is not None:
            t.add_row(after, Text(""))
        k += 1
    return t, left_out


def render_comparison(console: Console, res: dict, limit: int | None = None, show_same: bool = False,
                      more: str = "--limit N, or --json for all") -> None:
    """The comparison as a table; ``more``: how this door shows the rows a ``limit`` left out."""
    a, b = res["doc_a"], res["doc_b"]
    c = res["counts"]
    head = Text()
    head.append(f"{a['doc_id']} {a['label']} ({counted(a['chunks'], 'chunk')})", style="bold")
    head.append("  ⇄  ")
    head.append(f"{b['doc_id']} {b['label']} ({counted(b['chunks'], 'chunk')})", style="bold")
    console.print(head)
    if res.get("topic"):
        f = res.get("focus") or {}
        console.print(Text(f"topic {res['topic']!r}: the aligned region around {f.get('a') or '-'} and "
                           f"{f.get('b') or '-'}", style="dim"))
    if res.get("note"):
        console.print(Text(res["note"], style="bold yellow"))
    summary = Text()
    for label, name in (("same", "same"), ("changed", "changed"), ("only-in-A", f"only in {a['doc_id']}"),
                        ("only-in-B", f"only in {b['doc_id']}")):
        if summary:
            summary.append(" · ")
        summary.append(f"{name} {c.get(label, 0)}", style=LABEL_STYLE[label])
    console.print(summary)
    table, left_out = comparison_table(res, limit=limit, show_same=show_same)
    console.print(table)
    if left_out:
        console.print(Text(f"… {left_out} more changed/only rows not shown ({more})",
                           style="dim"))
    tm = res.get("timings_ms") or {}
    console.print(Text(f"aligned in {tm.get('align_ms', 0):.0f} ms, labelled in {tm.get('label_ms', 0):.0f} ms; "
                       f"red: only in {a['doc_id']}, green: only in {b['doc_id']}", style="dim"))
