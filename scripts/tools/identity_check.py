"""Before/after a refactor: the same workload run by two versions of localjudge must store, report and
summarise byte for byte the same. A dev tool (CONTRIBUTING "Before/after a refactor"); never imported by the package.

    python scripts/tools/identity_check.py [--old REF] [--new PATH] [--model SPEC] [--interrupt-after N]

REF (default b6efdab) is checked out in a temporary git worktree; PATH (default: this checkout) is used as it is.
Each side runs in a subprocess of its own (PYTHONPATH = its tree, one thread, a fresh LOCALJUDGE_HOME whose compiled
constraint indexes, keyed by pattern and vocabulary, the second side reuses from the first; the same
run directories, so paths agree) the fixed workload below through the public API only (`localjudge.evaluate`
with catalog judges, `panel=`, `escalate_to=`/`escalate_below=`, `mapping=`, `both_orders=`):

  tests/data/runner_mixed30.jsonl (30 CoQA rows, three labels, one blank answer) x
    plain     correctness (yes_no_json) + coherence (score_json) + factuality (choice)
    panel     relevance_to_query by [MODEL, scripted member]
    cascade   pairwise (pairwise_json) by MODEL in both orders (their agreement is the confidence), escalated
              below 0.75 to a scripted model
    pairwise  pairwise, the answer against the ground truth, one order

  turns     a chat per turn (conversation_completeness, deepeval_turn_relevancy, deepeval_knowledge_retention) and
              per session (deepeval_role_adherence,
              conversational_tool_call_efficiency, conversational_safety) on CHATS below (tool calls included)

each first interrupted after N progress events (the callback raises), then resumed to the end; then (once) a served
session: `localjudge serve` on a loopback port answering SERVED below through the chat, Ollama and responses doors
(a JSON schema, a choice, a stream), and `--help` of every command. Every side dumps,
one canonical JSON line per item: every row of every table of each results.sqlite (all columns, JSON cells
parsed), the export files, each progress event and what each `evaluate` returned or raised. What differs between
two runs of the same code is masked: timestamps, the run ids made of one, wall-clock timings (`timings`,
`elapsed_s`). The dumps are compared line by line; the first differences are printed and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OLD = "b6efdab"
DATA = Path("tests") / "data" / "runner_mixed30.jsonl"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d{4}|[+-]\d\d:\d\d|Z)?")
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
WALL_CLOCK_KEYS = {"timings", "elapsed_s"}
WALL_CLOCK_COLUMNS = {"total_ms"}  # export columns that are wall-clock timings (results.csv)
SHOWN = 10  # differences printed

# ------------------------------------------------------------------------------------------------ canonical dump


def _mask(value: Any) -> Any:
    """`value` with wall-clock keys and timestamps replaced by placeholders (run ids are renamed by `canonical`)."""
    if isinstance(value, dict):
        return {k: ("<wall-clock>" if k in WALL_CLOCK_KEYS else _mask(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v) for v in value]
    if isinstance(value, str):
        try:
            parsed = json.loads(value) if value[:1] in "{[" else None
        except ValueError:
            parsed = None
        if parsed is not None:
            return {"<json>": _mask(parsed)}
        return TIME.sub("<time>", value)
    return value


def canonical(items: Iterable[dict[str, Any]], work: str) -> list[str]:
    """One sorted-key JSON line per item, masked; run ids renamed run-0, run-1... in order of first appearance and
    the side's work folder written as <work>, so two runs of the same code give the same lines."""
    ids: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"run-{len(ids)}")

    lines = []
    for item in items:
        text = json.dumps(_mask(item), sort_keys=True, ensure_ascii=False, default=str)
        lines.append(RUN_ID.sub(rename, text.replace(work, "<work>")))
    return lines


def sqlite_items(db: Path, label: str) -> list[dict[str, Any]]:
    """Every row of every table of the SQLite file `db`, all columns, in primary-key (else rowid) order."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out: list[dict[str, Any]] = []
        for t in tables:
            cols = conn.execute(f'PRAGMA table_info("{t}")').fetchall()
            key = [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5]] or ["rowid"]
            order = ", ".join(f'"{k}"' if k != "rowid" else k for k in key)
            cur = conn.execute(f'SELECT * FROM "{t}" ORDER BY {order}')
            names = [d[0] for d in cur.description]
            for row in cur:
                values = dict(zip(names, row, strict=True))
                where = {k: values[k] for k in key if k in values}
                out.append({"item": f"{label}/{t}", "row": where, "values": values})
        return out
    finally:
        conn.close()


def _keyed(lines: list[str]) -> dict[str, str]:
    """Each dump line under its key: (item, row) and its occurrence, so one inserted line shifts nothing."""
    out: dict[str, str] = {}
    for line in lines:
        base = _where(line)
        n = 0
        while f"{base} #{n}" in out:
            n += 1
        out[f"{base} #{n}"] = line
    return out


_SCHEMA_VERSION = re.compile(r'(\\?"store_schema_version\\?": )\d+')


def grown(old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """The two dumps with what an append-only store migration adds taken out of the comparison (`--schema-grew`):
    `_migrations` rows only the new side has, columns only the new side's rows have, and the store schema
    version. Nothing the old side has is dropped: a changed or missing old value still differs."""
    old_by, new_by = _keyed(old), _keyed(new)
    kept: list[str] = []
    for key, line in new_by.items():
        d = json.loads(line)
        if key not in old_by and str(d.get("item", "")).endswith("/_migrations"):
            continue  # a migration the old code did not have
        if key in old_by and isinstance(d.get("values"), dict):
            before = json.loads(old_by[key]).get("values")
            if isinstance(before, dict):  # columns the new schema added
                d["values"] = {k: v for k, v in d["values"].items() if k in before}
                line = json.dumps(d, ensure_ascii=False, sort_keys=True)
                old_by[key] = json.dumps(json.loads(old_by[key]), ensure_ascii=False, sort_keys=True)
        kept.append(line)
    return [_SCHEMA_VERSION.sub(r"\1N", x) for x in old_by.values()], [_SCHEMA_VERSION.sub(r"\1N", x) for x in kept]


def compare(old: list[str], new: list[str], shown: int = SHOWN) -> list[str]:
    """The differences between two dumps, line by line under each line's (item, row) key (one inserted line is one
    difference, not a shift of all after it), each naming its line number, item and row (at most `shown`, then a
    count)."""
    old_by, new_by = _keyed(old), _keyed(new)
    old_at = {k: i for i, k in enumerate(old_by)}
    new_at = {k: i for i, k in enumerate(new_by)}
    diffs: list[str] = []
    for key in [*old_by, *(k for k in new_by if k not in old_by)]:
        a, b = old_by.get(key), new_by.get(key)
        if a == b:
            continue
        where = key.rsplit(" #", 1)[0]
        n = (new_at[key] if b is not None else old_at[key]) + 1
        if a is None or b is None:
            diffs.append(f"line {n} ({where}): only in {'new' if a is None else 'old'}: {(a or b or '')[:300]}")
        else:
            col = next(j for j in range(min(len(a), len(b)) + 1) if j >= min(len(a), len(b)) or a[j] != b[j])
            diffs.append(
                f"line {n} ({where}), from character {col}:\n  old: …{a[max(0, col - 80) : col + 160]}\n"
                f"  new: …{b[max(0, col - 80) : col + 160]}"
            )
    if len(diffs) > shown:
        return [*diffs[:shown], f"... and {len(diffs) - shown} more differing lines"]
    return diffs


def _where(line: str | None) -> str:
    try:
        d = json.loads(line or "{}")
    except ValueError:
        return "?"
    return f"{d.get('item', '?')} {json.dumps(d.get('row', ''), sort_keys=True)}"


# ------------------------------------------------------------------------------------------------ the workload

CHATS = [
    {"id": "c1", "chatbot_role": "a polite arithmetic tutor", "messages": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And times 3? My name is Ada."},
        {"role": "assistant", "content": "12, Ada."},
        {"role": "user", "content": "What was my name?"},
        {"role": "assistant", "content": "Ada."},
    ]},
    {"id": "c2", "chatbot_role": "a travel assistant", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "type": "function",
            "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "18 C, sunny"},
        {"role": "assistant", "content": "It is 18 C and sunny in Paris."},
    ], "expected_tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}]},
]  # fmt: skip
SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}, "why": {"type": "string"}},
          "required": ["verdict", "why"], "additionalProperties": False}  # fmt: skip
ASK = "Is Paris the capital of France? Answer as JSON."
SERVED = [  # (door path, body): greedy, so both sides' answers are the model's same tokens
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": ASK}], "max_tokens": 40, "temperature": 0,
     "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}}}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 12,
     "temperature": 0, "logprobs": True, "top_logprobs": 2}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Count to five."}], "max_tokens": 12,
     "temperature": 0, "stream": True}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "nope"}}),
    ("/api/chat", {"messages": [{"role": "user", "content": ASK}], "stream": False, "format": SCHEMA,
     "options": {"temperature": 0, "num_predict": 40}}),
    ("/api/generate", {"prompt": "Say yes or no.", "stream": False, "options": {"temperature": 0, "num_predict": 8}}),
    ("/v1/responses", {"input": ASK, "max_output_tokens": 40, "temperature": 0,
     "text": {"format": {"type": "json_schema", "name": "v", "schema": SCHEMA}}}),
    ("/v1/responses", {"input": "Pick one.", "max_output_tokens": 16, "temperature": 0,
     "text": {"format": {"type": "json_schema", "name": "c", "schema": {"enum": ["red", "blue"]}}}}),
]  # fmt: skip
SERVED_WALL_CLOCK = {"created", "created_at", "id", "total_duration", "load_duration", "prompt_eval_duration",
                     "eval_duration", "system_fingerprint"}  # fmt: skip


def _served_mask(value: Any) -> Any:
    """A served answer with what differs between two runs of the same server masked (ids, times, durations)."""
    if isinstance(value, dict):
        return {k: ("<varies>" if k in SERVED_WALL_CLOCK else _served_mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_served_mask(v) for v in value]
    return value


def served(work: Path, model: str) -> list[dict[str, Any]]:
    """Start `localjudge serve` (this side's tree, one thread) on a free loopback port, send SERVED through its
    three doors, stop it; one dump item per answer (status, content type, body; a stream as its data lines)."""
    import http.client

    proc = subprocess.Popen([sys.executable, "-m", "localjudge", "serve", "--host", "127.0.0.1", "--port", "0",
                             "--model", model, "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stderr is not None
    port, name, seen = None, "", []
    for line in proc.stderr:
        seen.append(line)
        m = re.search(r"localjudge serve: (\S+) on http://127\.0\.0\.1:(\d+)/v1", line)
        if m:
            name, port = m.group(1), int(m.group(2))
            break
    if port is None:
        proc.kill()
        raise SystemExit("localjudge serve did not start: " + "".join(seen[-10:]))
    threading_drain(proc)
    items: list[dict[str, Any]] = []
    try:
        for i, (path, body) in enumerate(SERVED):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            conn.request("POST", path, body=json.dumps({"model": name, **body}), headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read().decode("utf-8", "replace")
            conn.close()
            kind = r.getheader("content-type", "")
            if kind.startswith("application/json"):
                got: Any = _served_mask(json.loads(raw))
            else:  # a stream: its data lines, each parsed where it is JSON
                got = []
                for ln in raw.splitlines():
                    text = ln.removeprefix("data: ").strip()
                    if text and text[:1] == "{":
                        got.append(_served_mask(json.loads(text)))
                    elif text:
                        got.append(text)
            items.append({"item": "serve/answers", "row": i, "values": {"path": path, "status": r.status,
                                                                           "type": kind, "body": got}})  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(60)
    return items


def threading_drain(proc: subprocess.Popen[str]) -> None:
    """Read the server's stderr to its end in a thread, so a full pipe never blocks it."""
    import threading

    threading.Thread(target=lambda: [None for _ in proc.stderr or []], daemon=True).start()


def helps() -> list[dict[str, Any]]:
    """`--help` of the command line and of every (sub)command, as click prints it."""
    import click
    from click.testing import CliRunner

    from localjudge.cli import main as cli

    items: list[dict[str, Any]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        out = CliRunner().invoke(cli, [*path, "--help"], terminal_width=100)
        items.append({"item": "help", "row": " ".join(path) or "-", "values": {"exit": out.exit_code,
                                                                             "text": out.output}})  # fmt: skip
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.list_commands(click.Context(cmd))):
                sub = cmd.get_command(click.Context(cmd), name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name])

    walk(cli, [])
    return items


class Interrupt(Exception):
    """Raised by the progress callback to interrupt a run."""


def workload(work: Path, model: str, interrupt_after: int, attempt: str) -> list[dict[str, Any]]:
    """One attempt ("interrupted" or "resumed") of the fixed workload (module docstring) in `work`, with the
    localjudge on sys.path; its dump items (after the resumed attempt, also every stored row and export)."""
    import localjudge  # the side's tree (PYTHONPATH)

    tree = Path(os.environ["PYTHONPATH"]).resolve()
    if not Path(localjudge.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"imported {localjudge.__file__}, not the localjudge of {tree}")

    rows = [json.loads(line) for line in (work / "data.jsonl").read_text(encoding="utf-8").splitlines()]
    yes = work / "scripted_yes.json"
    yes.write_text(json.dumps(['{"rationale": "scripted", "result": "yes"}', '{"rationale": "scripted", "result": "no"}']))
    better = work / "scripted_better.json"
    better.write_text(json.dumps(['{"explanation": "scripted", "better_response": 1}']))
    pair = ["answer_1=answer", "answer_2=ground_truth"]
    runs: dict[str, dict[str, Any]] = {
        "plain": dict(judges=["correctness", "coherence", "factuality"], mapping=["expected=ground_truth"]),
        "panel": dict(judges=["relevance_to_query"], panel=[model, f"scripted:{yes}"]),
        "cascade": dict(judges=["pairwise"], mapping=pair, both_orders=True, escalate_to=f"scripted:{better}",
                        escalate_below=0.75),
        "pairwise": dict(judges=["pairwise"], mapping=pair),
        "turns": dict(judges=["conversation_completeness", "deepeval_turn_relevancy", "deepeval_knowledge_retention"],
                      data=CHATS, conversation="turn"),
        "sessions": dict(judges=["deepeval_role_adherence", "conversational_tool_call_efficiency",
                                 "conversational_safety"], data=CHATS, conversation="session"),
    }  # fmt: skip
    items: list[dict[str, Any]] = []
    for name, kw in runs.items():
        judges = kw.pop("judges")
        if "panel" not in kw:
            kw["model"] = model
        events: list[Any] = []

        def progress(p: Any, events: list[Any] = events) -> None:
            events.append(p)
            if attempt == "interrupted" and len(events) >= interrupt_after:
                raise Interrupt(f"after {len(events)} progress events")

        data = kw.pop("data", rows)
        try:
            res = localjudge.evaluate(
                data,
                judges,
                out=work / name,
                progress=progress,
                options={"field_tokens": 24},
                model_options={} if model.startswith("scripted:") else {"n_threads": 1},
                **kw,
            )
            outcome: Any = {"returned": _plain(res)}
        except Interrupt as e:
            outcome = {"raised": f"Interrupt: {e}"}
        except Exception as e:  # noqa: BLE001 - what it raised is part of the behaviour compared
            outcome = {"raised": f"{type(e).__name__}: {e}"}
        for i, p in enumerate(events):
            items.append({"item": f"{name}/{attempt}/progress", "row": i, "values": _plain(p)})
        items.append({"item": f"{name}/{attempt}/outcome", "row": 0, "values": outcome})
        if attempt == "interrupted":
            continue
        files = sorted((work / name).iterdir()) if (work / name).is_dir() else []
        items.append({"item": f"{name}/files", "row": 0, "values": [f.name for f in files]})
        for f in files:
            if f.name == "results.sqlite":
                items.extend(sqlite_items(f, f"{name}/results.sqlite"))
            elif f.suffix in {".json", ".jsonl", ".csv"}:
                lines = f.read_text(encoding="utf-8").splitlines()
                items.extend({"item": f"{name}/{f.name}", "row": i, "values": ln} for i, ln in enumerate(lines))
    if attempt == "resumed" and not model.startswith("scripted:"):
        items.extend(served(work, model))
        items.extend(helps())
    return items


def _plain(obj: Any) -> Any:
    """A progress event or a run result as plain data (dataclasses, pydantic models, paths)."""
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "model_dump"):
        return _plain(obj.model_dump())
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    return str(obj)


# ------------------------------------------------------------------------------------------------ the two sides


def run_side(tree: Path, work: Path, args: argparse.Namespace) -> list[str]:
    """Run the workload with `tree`'s localjudge in a fresh subprocess in `work`; its canonical dump lines."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shutil.copy(Path(args.new) / DATA, work / "data.jsonl")  # both sides read the new tree's copy
    env = {**os.environ, "PYTHONPATH": str(tree), "LOCALJUDGE_HOME": str(work / "home")}
    env.pop("LOCALJUDGE_MODELS_HOME", None)
    # compiled constraint indexes, keyed by (pattern, vocabulary): the second side reuses what the first compiled
    (work.parent / "fsm-cache").mkdir(exist_ok=True)
    (work / "home").mkdir()
    (work / "home" / "fsm").symlink_to(work.parent / "fsm-cache", target_is_directory=True)
    items: list[dict[str, Any]] = []
    for attempt in ("interrupted", "resumed"):  # a process each: the interrupted one is gone, as after Ctrl-C
        cmd = [sys.executable, str(Path(__file__).resolve()), "--side", str(work), "--attempt", attempt,
               "--model", args.model, "--interrupt-after", str(args.interrupt_after)]  # fmt: skip
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise SystemExit(f"the workload failed with {tree}:\n{r.stderr[-4000:]}")
        raw = (work / f"{attempt}.jsonl").read_text(encoding="utf-8").splitlines()
        items.extend(json.loads(line) for line in raw)
    return canonical(items, str(work))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", default=DEFAULT_OLD, help="git ref of the code before (default %(default)s)")
    ap.add_argument("--new", default=str(ROOT), help="tree of the code after (default: this checkout)")
    ap.add_argument("--model", default="smollm2-135m", help="model of the workload (one thread; default %(default)s)")
    ap.add_argument("--interrupt-after", type=int, default=7, help="progress events before the interruption")
    ap.add_argument("--work", help="keep the work folder here (default: a temporary one, removed)")
    ap.add_argument(
        "--reuse-old",
        action="store_true",
        help="with --work: compare against the old side's dump kept there by an earlier check (the same --old)",
    )
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="only compare two dump.jsonl files")
    ap.add_argument(
        "--schema-grew",
        action="store_true",
        help="allow what an append-only store migration adds (new _migrations rows, new columns, the schema version)",
    )
    ap.add_argument("--side", help=argparse.SUPPRESS)  # internal: run one attempt in this folder, write ATTEMPT.jsonl
    ap.add_argument("--attempt", choices=["interrupted", "resumed"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.compare:
        old_dump, new_dump = (Path(p).read_text(encoding="utf-8").splitlines() for p in args.compare)
        return report(old_dump, new_dump, f"{args.compare[0]} vs {args.compare[1]}", args.schema_grew)
    if args.side:
        work = Path(args.side)
        items = workload(work, args.model, args.interrupt_after, args.attempt)
        text = "".join(json.dumps(it, ensure_ascii=False, default=str) + "\n" for it in items)
        (work / f"{args.attempt}.jsonl").write_text(text, encoding="utf-8")
        return 0
    base = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="identity-check-"))
    old_tree = base / "old-tree"
    kept = base / "old" / "dump.jsonl"
    if args.reuse_old:
        if not kept.is_file():
            raise SystemExit(f"--reuse-old: no {kept} (run once with --work {base} first)")
        shutil.rmtree(base / "new", ignore_errors=True)
        t0 = time.perf_counter()
        new = run_side(Path(args.new).resolve(), base / "side", args)
        shutil.move(str(base / "side"), str(base / "new"))
        (base / "new" / "dump.jsonl").write_text("".join(ln + "\n" for ln in new), encoding="utf-8")
        old = kept.read_text(encoding="utf-8").splitlines()
        took = time.perf_counter() - t0
        return report(old, new, f"{args.old} (kept) vs {args.new}, model {args.model}, {took:.0f} s", args.schema_grew)
    for stale in ("old", "new", "fsm-cache"):
        shutil.rmtree(base / stale, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(old_tree), args.old],
                   check=True, capture_output=True)  # fmt: skip
    try:
        old = run_side(old_tree, base / "side", args)
        shutil.move(str(base / "side"), str(base / "old"))
        kept.write_text("".join(ln + "\n" for ln in old), encoding="utf-8")  # kept at once, for --reuse-old
        new = run_side(Path(args.new).resolve(), base / "side", args)
        shutil.move(str(base / "side"), str(base / "new"))
        (base / "new" / "dump.jsonl").write_text("".join(ln + "\n" for ln in new), encoding="utf-8")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)], check=False)
        if not args.work:
            shutil.rmtree(base, ignore_errors=True)
    took = time.perf_counter() - t0
    return report(old, new, f"{args.old} vs {args.new}, model {args.model}, {took:.0f} s", args.schema_grew)


def csv_columns(lines: list[str]) -> list[str]:
    """The dump with each CSV export read as records (the file's lines joined back: a cell may hold a line break),
    one line per record as {column: cell} by the header (the header as {column: column}), wall-clock columns
    masked: a timing differs between two runs of the same code, and a column an append-only migration added is
    then a key `grown` can set apart."""
    import csv
    import io

    files: dict[str, list[str]] = {}
    out: list[str | None] = []
    first: dict[str, int] = {}
    for line in lines:
        d = json.loads(line)
        item, values = str(d.get("item", "")), d.get("values")
        if not item.endswith(".csv") or not isinstance(values, str):
            out.append(line)
            continue
        if item not in files:
            files[item], first[item] = [], len(out)
            out.append(None)
        files[item].append(values)
    records: dict[int, list[str]] = {}
    for item, texts in files.items():
        rows = list(csv.reader(io.StringIO("\n".join(texts) + "\n")))
        header = rows[0] if rows else []
        lines_of = [{"item": item, "row": 0, "values": {c: c for c in header}}]
        for i, cells in enumerate(rows[1:], start=1):
            if len(cells) != len(header):  # a ragged record stays as its cells
                lines_of.append({"item": item, "row": i, "values": cells})
                continue
            vals = {h: ("<wall-clock>" if h in WALL_CLOCK_COLUMNS else c) for h, c in zip(header, cells, strict=True)}
            lines_of.append({"item": item, "row": i, "values": vals})
        records[first[item]] = [json.dumps(x, ensure_ascii=False, sort_keys=True) for x in lines_of]
    return [x for i, line in enumerate(out) for x in (records[i] if line is None else [line])]


def report(old: list[str], new: list[str], what: str, schema_grew: bool = False) -> int:
    """Print whether two dumps are identical (else their first differences); the exit code, 0 or 1."""
    old, new = csv_columns(old), csv_columns(new)
    diffs = compare(*grown(old, new)) if schema_grew else compare(old, new)
    print(f"identity check: {what}: {len(old)} / {len(new)} dump lines")
    if diffs:
        print("DIFFERENT:\n" + "\n".join(diffs))
        return 1
    print("identical" + (" (beside what append-only store migrations added)" if schema_grew else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
