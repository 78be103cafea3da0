"""The docs site and the README: every python/bash snippet of the docs is run by a test or listed here as not
runnable with a reason; the snippets no other test runs are run here, verbatim, on the default model (one
core); the README stays short and its links into docs/ resolve; the strict build generates the CLI
reference and the judge catalog from the code."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_snippets import ROOT, doc_pages, fenced, page_text, section, section_snippets

# Snippets run verbatim by a test: (page, a string only that snippet contains) -> the test file that runs it.
RUN_BY = {
    ("README.md", "# one judgement, typed JSON out"): "tests/test_docs.py",
    ("README.md", 'localjudge.judge("correctness"'): "tests/test_docs.py",
    ("docs/index.md", "# one judgement, typed JSON out"): "tests/test_docs.py",
    ("docs/index.md", 'localjudge.judge("correctness"'): "tests/test_docs.py",
    ("docs/models.md", "--option n_ctx=2048"): "tests/test_docs.py",
    ("docs/batch-runs.md", "--map retrieval_context=docs"): "tests/test_docs.py",
    ("docs/reports.md", "localjudge report runs/exp1"): "tests/test_docs.py",
    ("docs/align.md", "localjudge align groundedness"): "tests/test_docs.py",
    ("docs/integrations.md", "mlflow.genai.evaluate"): "tests/test_integrations_readme.py",
    ("docs/conversations.md", "conv = from_messages('[{"): "tests/test_conversations.py",
    ("docs/conversations.md", 'get_judge("conversation_completeness")'): "tests/test_conversations.py",
    ("docs/conversations.md", 'conversation="turn")'): "tests/test_conversations.py",
    ("docs/conversations.md", "--mlflow-sessions sqlite:///mlflow.db"): "tests/test_conversation_runs.py",
    ("docs/conversations.md", "--conversation chat.json --granularity turn"): "tests/test_judge_conversation.py",
    ("docs/integrations.md", "LocalJudgeLLM"): "tests/test_integrations_readme.py",
    ("docs/integrations.md", "LocalJudgeRagasLLM"): "tests/test_integrations_readme.py",
    ("docs/integrations.md", "assert_judge"): "tests/test_integrations_readme.py",
    ("docs/integrations.md", "pd.DataFrame"): "tests/test_integrations_readme.py",
    ("docs/integrations.md", "LocalJudgeConversationalMetric"): "tests/test_integrations_deepeval_conversation.py",
    ("docs/serve.md", "from openai import OpenAI"): "tests/test_serve_readme.py",
    ("docs/serve.md", "OPENAI_API_BASE"): "tests/test_serve_readme.py",
    ("docs/serve.md", "instructor.Mode.TOOLS"): "tests/test_serve_readme.py",
    ("docs/serve.md", "USE_LOCAL_MODEL"): "tests/test_serve_readme.py",
    ("docs/serve.md", '"think_tokens": 32'): "tests/test_constraint_serve.py",
    ("docs/serve.md", "ollama.Client"): "tests/test_serve_ollama.py",
    ("docs/serve.md", "--alias geval=judge"): "tests/test_serve_clients.py",
    ("docs/serve.md", "deepeval set-local-model --model=geval"): "tests/test_serve_clients.py",
    ("docs/view.md", "localjudge view runs/quickstart\n"): "tests/test_view_docs.py",
    ("docs/plugins.md", "localjudge judge thumbs_keywords --model keyword:refund"): "tests/test_plugins.py",
    ("docs/plugins.md", "from localjudge import get_judge, load_engine, make_format"): "tests/test_plugins.py",
    ("docs/plugins.md", "register_backend("): "tests/test_plugins.py",
    ("docs/plugins.md", "print(capabilities_of(engine))"): "tests/test_plugins.py",
    ("docs/constraints.md", '"pattern": "^[A-Z]{3}-[0-9]{2}$"'): "tests/test_constraint_docs.py",
    ("docs/constraints.md", "sql = make_format("): "tests/test_constraint_docs.py",
    ("docs/constraints.md", "DecodeOptions(think_tokens=16)"): "tests/test_constraint_docs.py",
    ("docs/trust.md", "from localjudge.labels.calibration import calibrate"): "tests/test_calibration_docs.py",
    ("docs/trust.md", "escalate_to="): "tests/test_calibration_docs.py",
    ("docs/trust.md", "panel=["): "tests/test_calibration_docs.py",
    ("docs/trust.md", "from localjudge.ensembles.escalation import"): "tests/test_calibration_docs.py",
    ("docs/view.md", "localjudge view --runs-root runs"): "tests/test_view_docs.py",
    ("docs/view.md", "localjudge labels export runs/quickstart"): "tests/test_view_docs.py",
    ("docs/view.md", "--allow-host judge.lan"): "tests/test_view_docs.py",
    ("docs/integrations.md", "session_scorer("): "tests/test_integrations_mlflow_session_scorers.py",
    ("docs/conversations.md", "cases = [ConversationalTestCase("): "tests/test_framework_cases_run.py",
}
# Snippets no test runs, each with the reason.
NOT_RUN = {
    ("README.md", ".venv/bin/pip install ."): "installs from PyPI (network) and builds llama-cpp-python (about 6 min)",
    ("docs/index.md", ".venv/bin/pip install ."): "installs from PyPI (network) and builds llama-cpp-python (about 6 min)",
    ("README.md", "bash scripts/test.sh"): "CI's own command (.ci/run): it runs this suite",
    ("docs/index.md", "bash scripts/test.sh"): "CI's own command (.ci/run): it runs this suite",
    ("CONTRIBUTING.md", "bash scripts/test.sh"): "CI's own command (.ci/run) and its unit tier (--fast): they run this "
    "suite (the fast loop's block also rewrites the checkout: ruff --fix, format)",
    (
        "CONTRIBUTING.md",
        "class MyBackend(Backend)",
    ): "a sketch with elided bodies (...); tests/test_backends.py tests real backends",
    ("docs/models.md", "DGGML_CUDA"): "needs a GPU toolkit and the network (pip reinstall from source)",
    ("docs/models.md", "LOCALJUDGE_LAYOUT=shipped localjudge run"): "elided arguments (...); "
    "tests/test_models_optimize.py resolves the default with LOCALJUDGE_LAYOUT=shipped and as smollm2-135m-q4_1",
    ("docs/models.md", "localjudge models optimize smollm2-135m"): "names a user's model (my-model); "
    "tests/test_models_optimize.py runs `models optimize` on the default model and judges with the converted one",
    (
        "docs/models.md",
        "localjudge models pull prometheus-2-7b",
    ): "downloads GB-sized models from the Hugging Face Hub (network); tests/test_hub_pull.py runs pull against a loopback hub",
    ("docs/ray.md", "ray start --head"): "needs a Ray cluster of several machines (ray start, ray://); "
    "tests/test_ray.py runs --engine ray on a local cluster",
    ("docs/serve.md", "localjudge serve   "): "starts servers that run until stopped; tests/serve_support.py starts the same "
    "command and tests/test_serve_readme.py runs this page's client snippets against it",
    ("docs/trust.md", "localjudge agree runs/x --labels labels.jsonl"): "needs a run directory and a labels file; "
    "tests/test_calibration.py runs agree, run --labels and report --labels on a scripted run",
    ("docs/trust.md", "localjudge report runs/x -o report.html"): "needs a run directory with stored labels; "
    "tests/test_stored_labels.py runs run, report and run --labels RUN_DIR on a scripted run with imported labels",
    ("docs/trust.md", "--panel smollm2-135m,gemma3-270m --probs --threads 1 --out panel"): "3 to 5 minutes per command on the "
    "two real models over 40 rows; tests/test_panel.py and tests/test_cascade.py run the same commands on 2 rows",
    (
        "docs/trust.md",
        "python scripts/bench.py cascade",
    ): "a benchmark that times the real models (minutes); benchmarks are not tests",
    ("docs/serve.md", "server:http://gpu-box:8000"): "needs a server on another machine (gpu-box); "
    "tests/test_server_backend.py runs the server: backend against a loopback server",
    ("docs/trust.md", "--target-width 0.05"): "needs run directories with labels; tests/test_trust_wiring.py runs agree "
    "--target-width, run --labels and report --compare on scripted runs with imported labels",
    ("docs/conversations.md", "python scripts/bench.py conversations-models"): "a benchmark of the two real models over "
    "24 conversations (many minutes); tests/test_bench_conversations_models.py runs the section on scripted engines",
}
LANGS = ("python", "bash", "sh", "shell", "console")


def _entry_for(page: str, code: str) -> list[tuple[str, str]]:
    return [(p, n) for (p, n) in [*RUN_BY, *NOT_RUN] if p == page and n in code]


def test_every_docs_snippet_is_run_by_a_test_or_listed_with_a_reason():
    unlisted, ambiguous, used = [], [], set()
    for page in doc_pages():
        for s in fenced(page_text(page), page):
            if s.lang not in LANGS:
                continue
            keys = _entry_for(page, s.code)
            used.update(keys)
            if not keys:
                unlisted.append(f"{page}: {s.lang} snippet starting {s.code.splitlines()[0][:70]!r}")
            elif len(keys) > 1:
                ambiguous.append(f"{page}: {keys}")
    assert not unlisted, "run these snippets in a test, or list them in NOT_RUN with a reason:\n" + "\n".join(unlisted)
    assert not ambiguous, "\n".join(ambiguous)
    assert set(RUN_BY) | set(NOT_RUN) == used, f"entries matching no snippet: {(set(RUN_BY) | set(NOT_RUN)) - used}"
    for (page, _), test_file in RUN_BY.items():
        assert page in (ROOT / test_file).read_text(encoding="utf-8"), f"{test_file} does not read {page}"
    for reason in NOT_RUN.values():
        assert len(reason) > 20


def test_readme_is_at_most_150_lines():
    assert len(page_text("README.md").splitlines()) <= 150


def _anchors(page: Path) -> set[str]:
    from markdown.extensions.toc import slugify

    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#{1,6} (.*?)(?:\s*\{\s*#([\w-]+)\s*\})?\s*$", line)
        if m:
            out.add(m.group(2) or slugify(m.group(1), "-"))
    return out


def test_every_readme_link_into_docs_resolves():
    links = re.findall(r"\]\(([^)\s]+)\)", page_text("README.md"))
    into_docs = [link for link in links if link.startswith("docs/")]
    assert len(into_docs) >= 15  # the table of what it can do
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README links to {link}: no such file"
        if anchor:
            assert anchor in _anchors(target), f"README links to {link}: {path} has no heading with that anchor"


def test_readme_quick_start_is_the_docs_quick_start():
    for heading in ("Set up on a fresh machine: two commands", "60-second quick start"):
        for lang in ("bash", "python"):
            assert section_snippets("README.md", heading, lang) == section_snippets("docs/index.md", heading, lang)


def test_judge_catalog_renders_every_builtin_judge_file():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    catalog = hooks.render_catalog()
    names = sorted(p.stem for p in (ROOT / "localjudge" / "judges" / "builtin").glob("*.toml") if not p.name.startswith("_"))
    assert len(names) >= 29
    for name in names:
        assert f"\n## {name}\n" in catalog and f"[`{name}`](#{name})" in catalog
    # a prompt's text is there verbatim
    assert "Consider the following claim and document." in catalog


def _mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the site whose mkdocs.yml is in `root`, as scripts/test.sh runs it."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed: pip install '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [str(mkdocs), "build", "--strict", "--site-dir", str(site)]
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.system
def test_strict_build_fails_on_a_broken_anchor_a_broken_link_and_a_page_missing_from_the_nav(tmp_path):
    for name, needle, change in (
        (
            "anchor",
            "#no-such-heading",
            lambda d: (d / "cli.md").write_text((d / "cli.md").read_text() + "\n[x](batch-runs.md#no-such-heading)\n"),
        ),
        ("link", "no-such-page.md", lambda d: (d / "ray.md").write_text((d / "ray.md").read_text() + "\n[x](no-such-page.md)\n")),
        ("nav", "not-in-nav.md", lambda d: (d / "not-in-nav.md").write_text("# Not in the nav\n")),
    ):
        copy = tmp_path / name
        shutil.copytree(ROOT / "docs", copy / "docs")
        shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
        shutil.copy(ROOT / "CONTRIBUTING.md", copy / "CONTRIBUTING.md")
        change(copy / "docs")
        r = _mkdocs_build(copy, copy / "site")
        out = r.stdout + r.stderr
        assert r.returncode == 1 and "Aborted with 1 warnings in strict mode" in out and needle in out, (name, out[-2000:])


@pytest.mark.system
def test_strict_build_generates_the_cli_reference_and_the_judge_catalog(tmp_path):
    r = _mkdocs_build(ROOT, tmp_path / "site")
    assert r.returncode == 0, r.stderr[-3000:]
    cli = (tmp_path / "site" / "cli" / "index.html").read_text(encoding="utf-8")
    from localjudge.cli import main

    def commands(group, prefix):
        for name, cmd in group.commands.items():
            yield f"{prefix} {name}", cmd
            yield from commands(cmd, f"{prefix} {name}") if hasattr(cmd, "commands") else ()

    for path, cmd in commands(main, "localjudge"):
        assert f'id="{path.replace(" ", "-")}"' in cli, f"{path} is missing from the CLI reference"
        for param in cmd.params:
            for opt in param.opts:
                if opt.startswith("-"):
                    assert opt in cli, f"{path} {opt} is missing from the CLI reference"
    catalog = (tmp_path / "site" / "judges-catalog" / "index.html").read_text(encoding="utf-8")
    for name in ("correctness", "answer_relevancy", "selene_pairwise"):
        assert f'id="{name}"' in catalog


# --- the snippets run here, each as it is written, in a fresh directory, on one core -------------------------------


def _one_core() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # llama.cpp's default threads = usable cores = 1


def _shell(tmp_path: Path, script: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run a bash snippet with `localjudge` meaning this checkout's CLI on this interpreter."""
    bindir = tmp_path / "_bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "localjudge"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m localjudge "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_one_core,
    )


def _rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


RAG_ROW = {
    "input": "What is the capital of France?",
    "output": "Paris is the capital.",
    "context": "Paris is the capital and largest city of France.",
    "expected": "Paris",
}


@pytest.mark.system
def test_quick_start_commands_run_on_the_default_model(tmp_path):
    (code,) = section_snippets("docs/index.md", "60-second quick start", "bash")
    _rows(tmp_path / "data.jsonl", [RAG_ROW])
    r = _shell(tmp_path, code)
    assert r.returncode == 0, r.stderr[-3000:]
    first, _ = json.JSONDecoder().raw_decode(r.stdout[r.stdout.index("{") :])  # `judge correctness` prints its verdict
    assert first["judge"] == "correctness" and first["value"] in ("yes", "no")
    assert "groundedness" in r.stdout and "smollm2-135m" in r.stdout
    assert "note: smollm2-135m is the small model that ships for trying localjudge" in r.stdout  # run/cautions.py
    assert "negative controls (another row's answer;" in r.stdout  # report/controls.py (one row: nothing to swap)
    assert len((tmp_path / "runs" / "exp1" / "results.jsonl").read_text().splitlines()) == 2


def test_every_test_the_docs_name_exists():
    """A guarantee names the tests that check it (`tests/FILE.py::test_name`, docs/reliability.md and the other
    pages): a test moved or renamed without its page leaves the guarantee naming nothing."""
    missing = []
    for page in doc_pages():
        for m in re.finditer(r"tests/([\w/]+\.py)::(\w+)", page_text(page)):
            f = ROOT / "tests" / m.group(1)
            if not f.exists() or not re.search(rf"def {m.group(2)}\b", f.read_text(encoding="utf-8")):
                missing.append(f"{page}: tests/{m.group(1)}::{m.group(2)}")
    assert not missing, "\n".join(missing)


VERDICT_WORDS = re.compile(r"\b(blind|discriminates|inconclusive|n too small)\b")
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _form(line: str) -> str:
    """A printed line as far as it does not depend on the model's floats: numbers and verdict words masked, runs of
    spaces (the table's padding, which follows the widths of the numbers) as one."""
    line = re.sub(r"(, n = \d+: ).*", r"\1VERDICT", line)  # a control line's verdict, as a sentence
    return re.sub(r" +", " ", NUMBER.sub("#", VERDICT_WORDS.sub("VERDICT", line))).strip()


@pytest.mark.system
def test_the_output_the_docs_show_for_the_fresh_machine_command_is_what_it_prints(tmp_path):
    """docs/index.md shows what the README's first command prints after its install; the run part runs here on the
    default model and every line it prints has the form of the shown line at the same place. Compared exactly: the
    lines, their words, the table's columns and judges, the rows and the calls counted (`20 judged now (+ 20 control
    calls)`). Compared in form only: the means, rates, intervals, AUCs, p-values and verdict words, which the model's
    floats decide and which may differ on another CPU (docs/index.md says so); a same-verdict warning the docs show
    may be missing where this CPU's model gave another verdict, and none may be printed that the docs do not show.
    The conversion line is printed on a first run only and is left out."""
    (setup,) = section_snippets("docs/index.md", "Set up on a fresh machine: two commands", "bash")[:1]
    command = "localjudge " + setup.split(".venv/bin/localjudge ", 1)[1].strip()
    shown = [s.code for s in fenced(section("docs/index.md", "Set up on a fresh machine: two commands")) if s.lang == "text"][
        0
    ].splitlines()
    shown = [line for line in shown if not line.startswith("localjudge: smollm2-135m converted once")]
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "rag_sample.jsonl", tmp_path / "examples" / "rag_sample.jsonl")
    r = _shell(tmp_path, command)
    assert r.returncode == 0, r.stderr[-3000:]
    printed = r.stdout.splitlines()
    same_verdict = re.compile(r"warning: \w+ gave the same verdict")
    warned = [line for line in printed if same_verdict.match(line)]
    assert set(warned) <= set(shown), warned  # no warning the docs do not show
    shown = [line for line in shown if not same_verdict.match(line) or line in warned]
    assert [_form(line) for line in printed] == [_form(line) for line in shown]
    counts = next(line for line in printed if " judged now" in line)
    assert counts == next(line for line in shown if " judged now" in line)  # the rows and the calls, exactly


@pytest.mark.system
def test_python_in_three_lines_runs_on_the_default_model(tmp_path):
    (code,) = section_snippets("docs/index.md", "60-second quick start", "python")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, preexec_fn=_one_core
    )
    assert r.returncode == 0, r.stderr[-3000:]
    value, score, passed = r.stdout.split()[:3]
    assert value in ("yes", "no") and float(score) in (0.0, 1.0) and passed in ("True", "False")


@pytest.mark.system
def test_model_options_and_scripted_model_commands_run(tmp_path):
    (code,) = [s.code for s in fenced(page_text("docs/models.md")) if "--option n_ctx=2048" in s.code]
    _rows(tmp_path / "data.jsonl", [RAG_ROW, {**RAG_ROW, "output": "Lyon."}])
    (tmp_path / "answers.jsonl").write_text(
        '{"rationale": "supported", "result": "yes"}\n{"rationale": "not in the context", "result": "no"}\n', encoding="utf-8"
    )
    r = _shell(tmp_path, code)
    assert r.returncode == 0, r.stderr[-3000:]
    results = [json.loads(line) for line in (tmp_path / "runs" / "ci" / "results.jsonl").read_text().splitlines()]
    assert sorted(x["result"]["value"] for x in results) == ["no", "yes"]


@pytest.mark.system
def test_batch_run_with_a_mapped_column_runs(tmp_path):
    (code,) = [s.code for s in fenced(page_text("docs/batch-runs.md")) if s.lang == "bash"]
    row = {k: v for k, v in RAG_ROW.items() if k != "context"}
    _rows(tmp_path / "data.jsonl", [{**row, "docs": ["Paris is the capital and largest city of France."]}])
    r = _shell(tmp_path, code)
    assert r.returncode == 0, r.stderr[-3000:]
    results = [json.loads(line) for line in (tmp_path / "runs" / "exp1" / "results.jsonl").read_text().splitlines()]
    assert sorted(x["judge"] for x in results) == ["correctness", "groundedness"]
    assert all(x["result"]["value"] in ("yes", "no") for x in results)


@pytest.mark.system
def test_report_compare_agree_and_both_orders_commands_run(tmp_path):
    (code,) = [s.code for s in fenced(page_text("docs/reports.md")) if s.lang == "bash"]
    rows = [{**RAG_ROW, "id": "a"}, {**RAG_ROW, "id": "b", "output": "Lyon."}]
    _rows(tmp_path / "data.jsonl", rows)
    for run, answers in (("exp1", ["yes", "no"]), ("exp2", ["yes", "yes"])):
        (tmp_path / f"{run}.jsonl").write_text("".join(json.dumps({"rationale": "r", "result": a}) + "\n" for a in answers))
        prep = _shell(tmp_path, f"localjudge run data.jsonl -j correctness --model scripted:{run}.jsonl --out runs/{run}")
        assert prep.returncode == 0, prep.stderr[-3000:]
    _rows(tmp_path / "labels.jsonl", [{"id": "a", "label": "yes"}, {"id": "b", "label": "no"}])
    _rows(
        tmp_path / "pairs.jsonl",
        [
            {
                "question": "What is the capital of France?",
                "context": RAG_ROW["context"],
                "answer_1": "Paris.",
                "answer_2": "Lyon.",
            }
        ],
    )
    r = _shell(tmp_path, code)
    assert r.returncode == 0, r.stderr[-3000:]
    for html in ("report.html", "diff.html"):
        assert (tmp_path / html).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    agreement = json.loads((tmp_path / "agreement-correctness.json").read_text())
    assert agreement["n_used"] == 2 and agreement["accuracy"] == 1.0 and agreement["cohen_kappa"] == 1.0  # exp1 = the labels
    assert "Cohen's kappa" in r.stdout
    (pair,) = [json.loads(line) for line in (tmp_path / "runs" / "pairs" / "results.jsonl").read_text().splitlines()]
    assert pair["judge"] == "pairwise" and pair["result"]["error"] is None and "+both_orders" in pair["result"]["judge_version"]


@pytest.mark.system
def test_align_then_run_the_aligned_judge_commands_run(tmp_path):
    (code,) = [s.code for s in fenced(page_text("docs/align.md")) if s.lang == "bash"]
    facts = [
        ("What is the capital of France?", "Paris.", "Paris is the capital of France."),
        ("What colour is the sky?", "Blue.", "On a clear day the sky is blue."),
        ("How many legs has a spider?", "Eight.", "Spiders have eight legs."),
        ("What do bees make?", "Honey.", "Bees make honey and wax."),
        ("Which planet is largest?", "Jupiter.", "Jupiter is the largest planet."),
    ]
    labelled = []
    for q, a, c in facts:
        labelled += [
            {"input": q, "output": a, "context": c, "label": "yes"},
            {"input": q, "output": "Bananas.", "context": c, "label": "no"},
        ]
    _rows(tmp_path / "my_labelled_rows.jsonl", labelled)
    _rows(tmp_path / "new_data.jsonl", [RAG_ROW])
    r = _shell(tmp_path, code)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "wrote aligned/groundedness_aligned.toml" in r.stdout and "held out (n = " in r.stdout
    (result,) = [json.loads(line) for line in (tmp_path / "runs" / "x" / "results.jsonl").read_text().splitlines()]
    assert result["judge"] == "groundedness_aligned" and result["result"]["score"] is not None
