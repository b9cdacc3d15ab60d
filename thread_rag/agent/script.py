"""Scripted sessions: a JSONL file of tool calls and questions, replayed without a person.

Lines: ``{"tool": "rag_search", "args": {"query": "..."}}`` or ``{"ask": "question"}`` (``"anyway": true`` explains
a question the documents do not answer all the same); blank lines
and lines starting with ``#`` are skipped. One JSON result per line on stdout; exit 1 if any line
failed (after running the rest).
"""
from __future__ import annotations

import codecs
import json
import math
import sys
from pathlib import Path

from ..errors import ThreadRagError, one_line
from ..records import to_dict
from .loop import all_tools
from .tools import call_tool, json_kind, result_errors


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value


LINE_SHAPE = 'a line has "tool" (with "args") or "ask"'


def _shape_problem(item) -> str | None:
    """Why a line is neither a tool call nor a question, or None."""
    if not isinstance(item, dict):
        return f"a line must be a JSON object, not {json_kind(item)}"
    if "tool" in item and "ask" in item:
        return f"{LINE_SHAPE}, not both"
    if "tool" not in item and "ask" not in item:
        return f"{LINE_SHAPE}; this one has neither"
    unknown = [k for k in item if k not in (("tool", "args") if "tool" in item else ("ask", "anyway"))]
    if unknown:
        return f'unknown key "{unknown[0]}": {LINE_SHAPE}'
    if "ask" in item and not isinstance(item["ask"], str):  # as a tool's text argument refuses a number
        return f'"ask" must be the question as text, not {json_kind(item["ask"])}'
    if "anyway" in item and not isinstance(item["anyway"], bool):
        return f'"anyway" must be true or false, not {json_kind(item["anyway"])}'
    return None


def _standard_input() -> bytes:
    if sys.stdin is None or sys.stdin.closed:
        raise ThreadRagError("script -: standard input is closed")
    if sys.stdin.isatty():
        print("reading the script's lines from the terminal (end with Ctrl-D)", file=sys.stderr)
    return sys.stdin.buffer.read()


def _script_file(path: str) -> bytes:
    p = Path(path)
    if p.is_dir():
        raise ThreadRagError(f"{path} is a folder, not a script file")
    if not p.exists():
        raise ThreadRagError(f"{path}: no such script file")
    return p.read_bytes()  # a pipe or /dev/stdin is read to its end


def run_script(engine, path: str, out=None, chat_model=None) -> int:
    out = out or sys.stdout
    data = _standard_input() if path == "-" else _script_file(path)
    tools = all_tools(engine)
    agent = None
    failed = 0
    data = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data  # a BOM is no part of line 1
    for n, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith(b"#"):  # before decoding: a comment may be in any encoding
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # this line fails, the rest run
            failed += 1
            out.write(json.dumps({"line": n, "ok": False, "error": f"not UTF-8 text (byte {exc.start + 1} of the "
                                  f"line is 0x{raw[exc.start]:02x})"}) + "\n")
            continue
        try:
            item = json.loads(line, parse_constant=_no_constant, parse_float=_finite)
        except ValueError as exc:
            failed += 1
            out.write(json.dumps({"line": n, "ok": False, "error": f"not valid JSON: {exc}"}) + "\n")
            continue
        problem = _shape_problem(item)
        if problem:
            failed += 1
            out.write(json.dumps({"line": n, "ok": False, "error": problem}) + "\n")
            continue
        if "ask" in item:
            try:
                if agent is None:
                    from .loop import Agent

                    agent = Agent(engine, chat_model=chat_model)
                ans = agent.ask(item["ask"], anyway=item.get("anyway", False))
                out.write(json.dumps({"line": n, "ok": True, "ask": item["ask"], "result": to_dict(ans)},
                                     ensure_ascii=False) + "\n")
            except Exception as exc:  # noqa: BLE001 - one line per failed question; the script goes on
                failed += 1
                out.write(json.dumps({"line": n, "ok": False, "ask": item["ask"], "error": one_line(exc)}) + "\n")
            continue
        outcome = call_tool(tools, item["tool"], item.get("args", {}))
        result = to_dict(outcome.result) if outcome.ok else None
        errors = result_errors(outcome.tool, result)  # partly failed (an unknown id, a corrupt file): not ok
        ok = outcome.ok and not errors
        failed += not ok
        row = {"line": n, "ok": ok, "tool": outcome.tool, "args": item.get("args", {})}  # as given
        if outcome.ok:
            row["result"] = result
        if not ok:
            row["error"] = outcome.error if not outcome.ok else f"{outcome.tool}: " + "; ".join(errors)
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
    return 1 if failed else 0
