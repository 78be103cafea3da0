"""`localjudge models pull` against a loopback stand-in for the hub (tests/hub_server.py, via HF_ENDPOINT):
a fresh pull that the model loader then uses, resume after a killed transfer (bytes sent again measured),
a digest mismatch (pin and hub digest), no network, offline mode, HF_TOKEN — and in every case nothing
half-written where the loader would find it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli
from hub_server import FakeHub

from localjudge.models.registry import resolve_model

SRC = Path(resolve_model(None).path)  # the default model's GGUF (98 MB) is the file the fake hub serves
SIZE = SRC.stat().st_size


def env_for(home: Path, hub_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "LOCALJUDGE_"))}
    env.update(
        LOCALJUDGE_HOME=str(home),
        HF_ENDPOINT=hub_url,
        HF_HOME=str(home / "hf_home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        DO_NOT_TRACK="true",
        **extra,
    )
    return env


def local_files(home: Path) -> list[str]:
    """Files where the model loader could look: the models home except the staging folder."""
    root = home / "models"
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".partial" not in p.parts and p.suffix == ".gguf"
    )


def manifest(home: Path) -> dict:
    p = home / "models" / "manifest.json"
    return json.loads(p.read_text())["models"] if p.exists() else {}


def last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def small_gguf(tmp_path: Path, mb: int = 4) -> Path:
    """A GGUF header with a few MB after it: enough for the transfer and digest paths (never loaded)."""
    p = tmp_path / "small.gguf"
    with open(SRC, "rb") as f:
        p.write_bytes(f.read(mb << 20))
    return p


@pytest.mark.system
@pytest.mark.slow
def test_fresh_pull_then_the_model_is_usable_by_name(tmp_path):
    home = tmp_path / "home"
    with FakeHub(xet=True) as hub:  # the hub advertises xet; the pull stays on plain HTTP (one GET, no token route)
        hub.add("test/smol", "smol.gguf", SRC)
        env = env_for(home, hub.url, HF_TOKEN="hf_test_token")
        r = cli("models", "pull", "hf:test/smol/smol.gguf@main", "--name", "smol", env=env, inherit_env=False)
        assert r.returncode == 0, r.stderr
        assert "recorded (unpinned" in r.stdout and "pulling test/smol/smol.gguf" in r.stderr
        gets = [x for x in hub.log if x["method"] == "GET"]
        assert len(gets) == 1 and gets[0]["sent"] == SIZE and gets[0]["range"] is None
        assert all(x["authorization"] == "Bearer hf_test_token" for x in hub.log)  # HF_TOKEN is honoured
        assert not any("xet" in x["path"] for x in hub.log)
        assert local_files(home) == ["local/smol.gguf"]
        entry = manifest(home)["smol"]
        assert entry["sha256"] == hub.files[("test/smol", "smol.gguf")].sha256 and entry["pinned"] is False
        assert entry["commit"] and entry["gguf"]["architecture"] == "llama"
        again = cli("models", "pull", "hf:test/smol/smol.gguf@main", "--name", "smol", env=env, inherit_env=False)
        assert again.returncode == 0 and "already present" in again.stdout
        assert len([x for x in hub.log if x["method"] == "GET"]) == 1  # nothing downloaded twice
    # the hub is gone: the pulled model works by name, offline, and verify calls it unpinned
    v = cli("models", "verify", "smol", env=env, inherit_env=False)
    assert v.returncode == 0 and "unpinned" in v.stdout and entry["sha256"] in v.stdout
    j = cli(
        "judge", "yes_no_json", "--prompt", "Is 2+2=4? Answer yes or no.", "--model", "smol", "--fast", env=env, inherit_env=False
    )
    assert j.returncode == 0, j.stderr
    assert json.loads(j.stdout)["value"] in ("yes", "no")


@pytest.mark.system
@pytest.mark.slow
def test_a_killed_transfer_resumes_instead_of_restarting(tmp_path):
    home = tmp_path / "home"
    with FakeHub() as hub:
        hub.add("test/smol", "smol.gguf", SRC)
        hub.throttle = 25e6  # 25 MB/s: about 4 s for the file
        env = env_for(home, hub.url)
        proc = subprocess.Popen(
            [sys.executable, "-m", "localjudge.cli", "models", "pull", "hf:test/smol/smol.gguf", "--name", "smol"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.time() + 60
        while hub.sent() < 40e6 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the transfer finished before it could be interrupted"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        first = hub.sent()
        assert 40e6 <= first < SIZE
        # killed mid-transfer: nothing the loader could pick up, only the staging folder's partial file
        assert local_files(home) == [] and "smol" not in manifest(home)
        partial = [p for p in (home / "models" / ".partial").rglob("*.incomplete")]
        assert len(partial) == 1 and 0 < partial[0].stat().st_size <= first
        have = partial[0].stat().st_size
        hub.throttle = None
        r = cli("models", "pull", "hf:test/smol/smol.gguf", "--name", "smol", env=env, inherit_env=False)
        assert r.returncode == 0, r.stderr
        resumed = [x for x in hub.log if x["method"] == "GET"][-1]
        assert resumed["range"] == f"bytes={have}-"  # resumed where the file on disk ended
        assert resumed["sent"] == SIZE - have
        resent = first + resumed["sent"] - SIZE  # bytes the server sent twice (in flight when killed)
        print(
            f"\nresume: killed after {first / 1e6:.1f} MB sent, {have / 1e6:.1f} MB on disk; resumed with "
            f"{resumed['sent'] / 1e6:.1f} MB; sent twice: {resent / 1e6:.2f} MB of {SIZE / 1e6:.1f} MB"
        )
        assert resent < 0.2 * SIZE  # only what was in flight (socket buffers) when the client died
    assert local_files(home) == ["local/smol.gguf"]
    assert manifest(home)["smol"]["sha256"] == hub.files[("test/smol", "smol.gguf")].sha256
    assert not any((home / "models" / ".partial").rglob("*.incomplete"))


@pytest.mark.system
def test_a_digest_mismatch_deletes_the_file_and_says_so(tmp_path):
    home = tmp_path / "home"
    small = small_gguf(tmp_path)
    reg = tmp_path / "models.toml"
    reg.write_text(f'[models.pinned-small]\nhub = "test/small"\nfile = "small.gguf"\nsha256 = "{"0" * 64}"\n')
    with FakeHub() as hub:
        hub.add("test/small", "small.gguf", small)
        hub.add("test/bad", "small.gguf", small, advertised_sha256="f" * 64)  # the hub's own digest disagrees
        env = env_for(home, hub.url, LOCALJUDGE_MODELS_TOML=str(reg))
        r = cli("models", "pull", "pinned-small", env=env, inherit_env=False)
        assert r.returncode == 3
        line = last_line(r.stderr)
        assert line.startswith("Error: downloaded small.gguf has sha256") and "expected 0000" in line
        assert "the registry's pin" in line and "deleted" in line and "Traceback" not in r.stderr
        r2 = cli("models", "pull", "hf:test/bad/small.gguf", env=env, inherit_env=False)
        assert r2.returncode == 3 and "the hub's LFS digest" in last_line(r2.stderr)
        assert hub.sent() == 2 * small.stat().st_size  # both were downloaded, then refused
    assert local_files(home) == [] and manifest(home) == {}
    assert not [p for p in (home / "models" / ".partial").rglob("*") if p.is_file()]
    gone = cli("judge", "yes_no_json", "--prompt", "hi", "--model", "pinned-small", env=env, inherit_env=False)
    assert gone.returncode == 3 and "is not downloaded" in gone.stderr and "models pull pinned-small" in gone.stderr


@pytest.mark.system
def test_no_network_is_one_line_and_leaves_nothing(tmp_path):
    home = tmp_path / "home"
    env = env_for(home, f"http://127.0.0.1:{closed_port()}")
    t0 = time.time()
    r = cli("models", "pull", "hf:test/smol/smol.gguf", env=env, inherit_env=False)
    assert r.returncode == 3 and time.time() - t0 < 60
    assert r.stderr.count("\n") == 1 and "cannot reach the model hub" in r.stderr and "models add PATH" in r.stderr
    assert local_files(home) == [] and manifest(home) == {}


@pytest.mark.system
def test_offline_mode_refuses_to_pull_in_one_line(tmp_path):
    home = tmp_path / "home"
    with FakeHub() as hub:
        hub.add("test/smol", "smol.gguf", small_gguf(tmp_path))
        env = env_for(home, hub.url, HF_HUB_OFFLINE="1")
        r = cli("models", "pull", "hf:test/smol/smol.gguf", env=env, inherit_env=False)
        assert r.returncode == 3 and r.stderr.count("\n") == 1
        assert "HF_HUB_OFFLINE" in r.stderr and "models add PATH" in r.stderr
        assert hub.log == []  # not even a HEAD request
    assert local_files(home) == [] and manifest(home) == {}


@pytest.mark.system
def test_unknown_repo_file_and_bad_specs_are_one_line(tmp_path):
    home = tmp_path / "home"
    with FakeHub() as hub:
        hub.add("test/smol", "smol.gguf", small_gguf(tmp_path))
        env = env_for(home, hub.url)
        for args, code, text in (
            (("hf:test/nope/smol.gguf",), 3, "repository test/nope not found"),
            (("hf:test/smol/other.gguf",), 3, "file 'other.gguf' not found"),
            (("hf:test/smol",), 2, "bad hub spec"),
            (("smollm2-135m",), 2, "needs no pull"),
            (("no-such-model",), 2, "unknown model 'no-such-model' to pull"),
            (("hf:test/smol/smol.gguf", "--name", "Bad Name"), 2, "not valid"),
        ):
            r = cli("models", "pull", *args, env=env, inherit_env=False)
            assert r.returncode == code and text in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert local_files(home) == []


def test_curated_models_are_named_not_downloaded():
    """The registry names the dedicated judges with repo, file, size, quantisation and licence; resolving one
    that is not pulled says how to get it and downloads nothing."""
    from localjudge.errors import ModelNotFoundError
    from localjudge.models.registry import registry

    models = registry()["models"]
    for name in ("prometheus-2-7b", "flow-judge-v0.1", "selene-1-mini", "qwen2.5-1.5b-instruct"):
        e = models[name]
        assert e["hub"] and e["file"].endswith(".gguf") and e["size"] and e["quantisation"] and e["license"]
        assert e.get("sha256") is None or len(e["sha256"]) == 64
        with pytest.raises(ModelNotFoundError, match=f"localjudge models pull {name}"):
            resolve_model(name)


@pytest.mark.system
def test_unpinned_reasoning_models_are_listed_unverified_and_a_failed_pull_is_one_line(tmp_path):
    """qwen3-0.6b and deepseek-r1-distill-qwen-1.5b have no published digest pinned: `models list` says they
    are unverified (text and --json); pulling one from a hub that lacks it is one line, exit 3, nothing left."""
    home = tmp_path / "home"
    with FakeHub() as hub:
        env = env_for(home, hub.url)
        rows = {r["name"]: r for r in json.loads(cli("models", "list", "--json", env=env, inherit_env=False).stdout)}
        text = cli("models", "list", env=env, inherit_env=False).stdout
        for name in ("qwen3-0.6b", "deepseek-r1-distill-qwen-1.5b"):
            assert rows[name]["verified"] is False and "unverified" in rows[name]["from"]
            assert any(name in line and "unverified" in line for line in text.splitlines())
            r = cli("models", "pull", name, env=env, inherit_env=False)
            repo = rows[name]["from"].split()[1]
            assert r.returncode == 3 and r.stderr.count("\n") == 1 and f"repository {repo} not found" in r.stderr, r.stderr
            assert "Traceback" not in r.stderr
        assert rows["prometheus-2-7b"]["verified"] is True and "unverified" not in rows["prometheus-2-7b"]["from"]
    assert local_files(home) == [] and manifest(home) == {}
