"""`localjudge models add PATH [--name NAME]` and `models info NAME`: a GGUF that arrived by hand (an
air-gapped site) is copied or linked into the models home, its digest recorded (or checked against a
curated pin) and its GGUF metadata read with the `gguf` package; `--model NAME` then finds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli

from localjudge.errors import ChecksumMismatchError, InputError, NotGGUFError
from localjudge.models.registry import registry, resolve_model, verify_model

pytestmark = pytest.mark.system

GEMMA_SHA = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh models home for each test (the session's compiled-index cache stays shared)."""
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))
    return tmp_path / "models"


@pytest.fixture(scope="module")
def gemma_file(_localjudge_home) -> Path:
    """The Gemma GGUF in the session's models home (assembled from its packages once for the whole session,
    not again in each test's fresh home): a real file that arrived by hand, for `models add` to take in."""
    return Path(resolve_model("gemma3-270m").path)


@pytest.mark.slow
def test_add_the_gemma_file_then_info_shows_its_metadata_and_the_model_resolves(gemma_file, home):
    from localjudge.models.files import add_model, model_info

    src = gemma_file
    got = add_model(src, name="gemma-usb")
    dest = home / "local" / "gemma-usb.gguf"
    assert got["path"] == str(dest) and dest.stat().st_size == src.stat().st_size and not dest.is_symlink()
    assert got["sha256"] == GEMMA_SHA and got["pinned"] is False and got["linked"] is False
    g = got["gguf"]
    assert g["architecture"] == "gemma3" and g["context_length"] == 32768 and g["chat_template"] is None
    assert g["quantisation"] == "Q4_K_M" and g["license"] == "gemma"
    info = model_info("gemma-usb")
    assert info["size_bytes"] == src.stat().st_size and info["license"] == "gemma" and info["architecture"] == "gemma3"
    assert info["context_length"] == 32768 and info["chat_template"].startswith("none")
    assert info["digest_source"] == "recorded on first add (unpinned)" and info["pinned"] is False
    r = resolve_model("gemma-usb")
    assert r.path == str(dest) and r.sha256 == GEMMA_SHA
    v, digest = verify_model("gemma-usb")
    assert digest == GEMMA_SHA
    out = cli("models", "info", "gemma-usb", env={"LOCALJUDGE_MODELS_HOME": str(home)})
    assert out.returncode == 0 and "context_length" in out.stdout and "32768" in out.stdout and "gemma" in out.stdout


def test_add_links_copies_refuses_duplicates_and_non_gguf(home, tmp_path):
    from localjudge.models.files import add_model

    src = Path(resolve_model(None).path)
    linked = add_model(src, name="smol-link", link=True)
    assert linked["path"] == str(src.resolve()) and linked["linked"] is True
    assert not (home / "local").exists() or not any((home / "local").iterdir())  # nothing copied
    assert resolve_model("smol-link").path == str(src.resolve())
    with pytest.raises(InputError, match="already exists"):
        add_model(src, name="smol-link")
    with pytest.raises(InputError, match="built-in registry model"):
        add_model(src, name="smollm2-135m")
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model")
    with pytest.raises(NotGGUFError, match="not a GGUF file"):
        add_model(bad)
    r = cli("models", "add", str(bad), env={"LOCALJUDGE_MODELS_HOME": str(home)})
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "not a GGUF file" in r.stderr


def test_add_under_a_curated_name_checks_its_pin(home, tmp_path, monkeypatch):
    from localjudge.models.files import add_model

    src = Path(resolve_model(None).path)
    good = registry()["models"]["smollm2-135m"]["sha256"]
    reg = tmp_path / "models.toml"
    reg.write_text(
        f'[models.curated-ok]\nhub = "x/y"\nfile = "a.gguf"\nsha256 = "{good}"\n'
        f'[models.curated-bad]\nhub = "x/y"\nfile = "b.gguf"\nsha256 = "{"1" * 64}"\n'
    )
    monkeypatch.setenv("LOCALJUDGE_MODELS_TOML", str(reg))
    with pytest.raises(ChecksumMismatchError, match="pinned to 1111"):
        add_model(src, name="curated-bad")
    assert not (home / "local" / "curated-bad.gguf").exists()
    got = add_model(src, name="curated-ok")
    assert got["pinned"] is True
    out = cli("models", "verify", "curated-ok", env={"LOCALJUDGE_MODELS_HOME": str(home), "LOCALJUDGE_MODELS_TOML": str(reg)})
    assert out.returncode == 0 and "pinned in models.toml" in out.stdout
    listed = json.loads(
        cli("models", "list", "--json", env={"LOCALJUDGE_MODELS_HOME": str(home), "LOCALJUDGE_MODELS_TOML": str(reg)}).stdout
    )
    row = next(r for r in listed if r["name"] == "curated-ok")
    assert "downloaded" in row["from"] and "not downloaded" not in row["from"]
