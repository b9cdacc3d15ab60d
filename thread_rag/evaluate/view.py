"""The eval run as a person reads it: what was asked, how search did (worst first), refusals, the comparison."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import counted
from ..render import styled


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _ci(d: dict) -> str:
    return f"{d['mean']:.3f} ({d['ci95'][0]:.3f}-{d['ci95'][1]:.3f})" if d.get("mean") is not None else "-"


def render_run(out: Console, run: dict) -> None:
    qs = run["questions"]
    made = ", ".join(f"{k} {v}" for k, v in qs.items())
    out.print(styled((f"{sum(qs.values())} questions ({made}) over {counted(len(run['documents']), 'document')}; "
                     f"search {run['search']}", "bold")))
    summ = run["summary"]
    ret = summ.get("retrieval")
    if ret:
        out.print(styled(f"hit@1 {_ci(ret['hit@1'])}   hit@5 {_ci(ret['hit@5'])}   MRR@10 {_ci(ret['mrr@10'])}"
                         f"   (95% bootstrap CIs, {ret['hit@5']['n']} questions searched)"))
        t = Table("kind", "questions", "hit@1", "hit@5", "MRR@10", title="by kind of question")
        for kind, g in sorted(summ["by_kind"].items(), key=lambda kv: kv[1]["hit@5"]):
            t.add_row(kind, str(g["questions"]), _pct(g["hit@1"]), _pct(g["hit@5"]), f"{g['mrr@10']:.3f}")
        out.print(t)
        names = {d: info["name"] for d, info in run["documents"].items()}
        if len(summ["by_document"]) > 1:
            t = Table("document", "questions", "hit@1", "hit@5", "MRR@10", title="by document, worst first")
            for d, g in sorted(summ["by_document"].items(), key=lambda kv: (kv[1]["hit@5"], kv[1]["mrr@10"]))[:15]:
                t.add_row(Text(f"{d} {names.get(d, '')}"), str(g["questions"]), _pct(g["hit@1"]), _pct(g["hit@5"]),
                          f"{g['mrr@10']:.3f}")
            out.print(t)
    if run.get("weakest"):
        t = Table("section", "q", "hit@5", "why (what the code can see)", "e.g.", title="weakest sections")
        for w in run["weakest"]:
            where = " > ".join(w["section"].split(" > ")[-2:]) or "(no heading)"  # its last two levels
            t.add_row(Text(f"{w['doc_id']} {where}"), str(w["questions"]), _pct(w["hit@5"]),
                      Text(w["reason"]), Text(w["example"]))
        out.print(t)
    ans = summ.get("answers")
    if ans:
        line = (f"answers ({run['answers']}): probes refused {ans['probes_refused']}/{ans['probes']}, answerable "
                f"wrongly refused {ans['wrongly_refused']}/{ans['answerable']}, quote from a gold chunk "
                f"{_pct(ans['quote_from_gold'])}")
        if ans["spans_checked"]:
            line += (f", spans not in the sources {ans['spans_unsupported']}/{ans['spans_checked']} "
                     f"({ans['answers_with_unsupported']} answers)")
        out.print(styled(line))
    if run.get("compare"):
        render_compare(out, run["compare"])
    tm = run["timings"]
    out.print(styled((f"search {tm['search_s']:.1f} s" + (f", answers {tm['answer_s']:.1f} s" if "answer_s" in tm else "")
                      + (f", model questions {tm['model_s']:.1f} s" if "model_s" in tm else "")
                      + f"; set {run['set']}; run written to {run['written_to']}", "dim")))


def render_compare(out: Console, c: dict) -> None:
    b = c["before"]
    out.print(styled((f"against {b['file']} ({b.get('search')}), {c['paired']} questions paired "
                      f"({c['changed']} ranks changed)", "bold")))
    t = Table("metric", "now - before", "95% CI")
    for m in ("hit@1", "hit@5", "mrr@10"):
        d = c[m]
        t.add_row(m, "-" if d["diff"] is None else f"{d['diff']:+.3f}",
                  "-" if d["ci95"] is None else f"{d['ci95'][0]:+.3f} .. {d['ci95'][1]:+.3f}")
    out.print(t)
    if c.get("settings_changed"):
        out.print(styled("settings changed: " + ", ".join(f"{k} {v['before']} -> {v['now']}"
                                                          for k, v in c["settings_changed"].items())))
    if c.get("documents_changed"):
        out.print(styled(("documents changed since (their questions were made again): "
                          + ", ".join(c["documents_changed"]), "yellow")))
    if c.get("refusals"):
        r = c["refusals"]
        out.print(styled(f"refused: probes {r['probes_before']} -> {r['probes_now']}, answerable "
                         f"{r['answerable_before']} -> {r['answerable_now']}"))
