"""What the adapters share: lazy framework imports, one-line missing-extra errors, records mapped onto
judge variables (non-string fields rendered as documents or JSON, never repr), the shared engine worker."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
from integrations_support import scripted, yes_no

from localjudge.errors import InputError


@pytest.mark.system
def test_importing_the_integrations_package_imports_no_framework():
    code = (
        "import sys, localjudge.integrations, localjudge.integrations.common, localjudge.testing, localjudge.api\n"
        "heavy = [m for m in ('mlflow', 'deepeval', 'ragas', 'pandas', 'langchain_core', 'instructor') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [("localjudge.integrations.deepeval", "deepeval", "deepeval"), ("localjudge.integrations.ragas", "ragas", "ragas")],
)
def test_a_missing_framework_is_one_line_naming_the_extra(monkeypatch, module, framework, extra):
    from localjudge.integrations.common import MissingExtraError

    monkeypatch.setitem(sys.modules, framework, None)  # what an uninstalled package looks like to import
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(MissingExtraError) as e:
        importlib.import_module(module)
    msg = str(e.value)
    assert "\n" not in msg and msg.endswith(f"pip install 'localjudge[{extra}]'") and e.value.exit_code == 2


def test_mlflow_scorer_without_mlflow_is_one_line(monkeypatch):
    from localjudge.integrations import mlflow as adapter
    from localjudge.integrations.common import MissingExtraError

    monkeypatch.setitem(sys.modules, "mlflow", None)
    with pytest.raises(MissingExtraError, match=r"^MLflow is not installed .*; pip install 'localjudge\[mlflow\]'$"):
        adapter.scorer("safety")


def test_run_mlflow_without_mlflow_stops_before_inference(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from localjudge.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "q", "output": "a"}) + "\n")
    monkeypatch.setitem(sys.modules, "mlflow", None)
    res = CliRunner().invoke(
        main, ["run", str(data), "-j", "safety", "--model", "scripted:", "--out", str(tmp_path / "r"), "--mlflow"]
    )
    assert res.exit_code == 2 and "pip install 'localjudge[mlflow]'" in res.output
    assert not (tmp_path / "r").exists()


def test_records_map_onto_variables_and_name_what_is_missing():
    from localjudge import get_judge
    from localjudge.integrations.common import bind_variables

    g = get_judge("groundedness")
    vals = bind_variables(
        g,
        [{"question": "q?"}],
        {
            "output": {"choices": [{"message": {"content": "It is 4."}}]},
            "context": [{"page_content": "doc one"}, {"text": "doc two"}],
        },
    )
    assert vals == {"input": "q?", "output": "It is 4.", "retrieval_context": ["doc one", "doc two"]}
    with pytest.raises(InputError) as e:
        bind_variables(g, [{"question": "q?"}], {"output": "a"}, where="this test record", hint="give {var}")
    assert str(e.value) == (
        "judge 'groundedness' needs 'retrieval_context' (or context), which this test record does not provide; "
        "give retrieval_context; the judge's required variables: input, output, retrieval_context"
    )


def test_non_string_fields_become_text_never_repr():
    from localjudge.integrations.common import as_text, as_value

    class Doc:
        page_content = "a langchain-style document"

    assert as_text(Doc()) == "a langchain-style document"
    assert as_text({"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "last"}]}) == "last"
    assert as_text({"only": "value"}) == "value"
    assert json.loads(as_text({"a": 1, "b": [1, 2]})) == {"a": 1, "b": [1, 2]}
    assert as_value([{"content": "c1"}, Doc(), 3]) == ["c1", "a langchain-style document", "3"]
    assert "{'" not in as_text({"a": {"b": "c"}, "d": 1})


def test_the_shared_worker_batches_threads_on_one_engine():
    from concurrent.futures import ThreadPoolExecutor

    from localjudge.integrations.common import BoundJudge, shared_worker

    eng = scripted(yes_no())
    assert shared_worker(eng) is shared_worker(eng)
    bound = BoundJudge("safety", engine=eng)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: bound.run({"content": f"text {i}"}), range(16)))
    assert [r.value for r in results] == ["yes"] * 16 and eng.calls == 16
    with pytest.raises(InputError, match="needs variable 'content'"):
        bound.run({})
