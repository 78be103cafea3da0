"""`localjudge models pull`: fetch a GGUF from a model hub, only when asked, and never half-written.

    pull("prometheus-2-7b")                                   a curated registry model (repo, file, pin)
    pull("hf:Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf@main", name="qwen")

Transfers go through `huggingface_hub.hf_hub_download` (optional extra `[hub]`), which honours
`HF_ENDPOINT` (read here at call time, so a mirror or a loopback test server works), `HF_TOKEN`
and `HF_HUB_OFFLINE`, shows a progress bar and resumes an interrupted transfer from its
`.incomplete` file with an HTTP Range request. Pulls keep huggingface_hub on plain HTTP even for
repositories stored with the hub's xet protocol (its `HF_HUB_DISABLE_XET` switch, for the call), so
that resume works as tested. Where the bytes go:

    models_home()/.partial/NAME/...      the transfer in progress (hub's own .incomplete + metadata)
    models_home()/local/NAME.gguf        the verified file, moved here by one rename
    models_home()/manifest.json          the entry that makes `--model NAME` work, written last

The model loader only ever opens files the manifest names, so a killed transfer, a digest mismatch
or a full disk never leaves a file it would pick up. The sha256 of the download is checked against
the registry's pin when there is one (mismatch: the file is deleted and the error says so), else
against the hub's own LFS digest (its ETag) when the hub gives one, and is then recorded as
"unpinned" (reported so by `models verify`).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import ChecksumMismatchError, InputError, ModelError
from .digest import sha256_file
from .files import check_name, default_name, gguf_metadata, local_dir
from .manifest import entry_exists, get_entry, partial_dir, put_entry
from .registry import check_gguf, registry, remember_sha256

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
DEFAULT_ENDPOINT = "https://huggingface.co"


class DownloadError(ModelError):
    """A model cannot be fetched: no network, offline mode, the hub refuses or lacks the file (exit 3)."""


class PullSpec(BaseModel):
    """What to pull: the local name, the hub repo, file and revision, and the registry's pin (if any)."""

    name: str
    repo: str
    file: str
    revision: str = "main"
    sha256: str | None = None  # the registry's pin
    registry: dict[str, Any] = {}


def parse_spec(spec: str, name: str | None = None) -> PullSpec:
    """A registry name with a hub entry, or `hf:OWNER/REPO/PATH/TO/FILE.gguf[@REVISION]`, as a `PullSpec`."""
    reg = registry().get("models", {})
    if spec.startswith("hf:"):
        body = spec[3:]
        revision = "main"
        if "@" in body:
            body, revision = body.rsplit("@", 1)
        _check_hub_path(spec, body, revision)
        parts = body.split("/")
        if len(parts) < 3 or not revision:
            raise InputError(f"bad hub spec {spec!r}; write hf:OWNER/REPO/FILE.gguf or hf:OWNER/REPO/FILE.gguf@REVISION")
        repo, file = "/".join(parts[:2]), "/".join(parts[2:])
        local = check_name(name or default_name(file))
        if local in reg:
            raise InputError(f"model name {local!r} is a registry model; pull it by name, or choose another --name")
        return PullSpec(name=local, repo=repo, file=file, revision=revision)
    if spec in reg:
        entry = reg[spec]
        if "hub" not in entry:
            raise InputError(f"model {spec!r} needs no pull: it comes from {entry.get('package') or 'a local file'}")
        if name and name != spec:
            raise InputError(f"a registry model keeps its name: drop --name {name!r} (or pull hf:{entry['hub']}/{entry['file']})")
        return PullSpec(
            name=spec,
            repo=entry["hub"],
            file=entry["file"],
            revision=entry.get("revision", "main"),
            sha256=entry.get("sha256"),
            registry=entry,
        )
    hub_names = [k for k, e in reg.items() if "hub" in e]
    raise InputError(f"unknown model {spec!r} to pull; use a curated name ({', '.join(hub_names)}) or hf:OWNER/REPO/FILE.gguf")


def _check_hub_path(spec: str, body: str, revision: str) -> None:
    """Refuse, before any request, a hub path or revision that is absolute, has `..`, `.` or empty segments, a
    backslash or a control character: the hub would normalise it to another path (or it would escape the
    download folder)."""
    for what, text in (("path", body), ("revision", revision)):
        segments = text.split("/")
        bad = (
            text.startswith("/")
            or "\\" in text
            or any(not c.isprintable() for c in text)
            or (what == "path" and any(seg in ("", ".", "..") for seg in segments))
            or (what == "revision" and any(seg in (".", "..") for seg in segments))
        )
        if bad:
            raise InputError(
                f"bad hub spec {spec!r}: the {what} {text!r} is absolute or has '..', '.', empty segments, backslashes or "
                "control characters; write hf:OWNER/REPO/FILE.gguf[@REVISION] with a plain relative path"
            )


def _offline() -> bool:
    return any(
        (os.environ.get(k) or "").upper() in {"1", "ON", "YES", "TRUE"} for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def endpoint() -> str:
    """The hub's base URL: `HF_ENDPOINT` when set, else https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _hint(name: str) -> str:
    return f"or copy the file here and run: localjudge models add PATH --name {name}"


# The transport errors huggingface_hub lets through: httpx's (hub 1.x) or httpx2's (hub 2.x), matched by class
# name so that neither package is imported here (the [hub] extra brings only the one its hub version needs).
_TRANSPORT_PACKAGES = ("httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3")
_NETWORK_ERRORS = {"NetworkError", "TimeoutException", "ConnectError", "ConnectTimeout", "ConnectionError", "Timeout"}


def _is_network_error(e: BaseException) -> bool:
    """No route to the hub: a refused or failed connection or a time-out, from the stdlib or an HTTP client."""
    if isinstance(e, (ConnectionError, TimeoutError)):
        return True
    return any(c.__name__ in _NETWORK_ERRORS and c.__module__.split(".")[0] in _TRANSPORT_PACKAGES for c in type(e).__mro__)


def _hub_error(e: BaseException, spec: PullSpec, where: str) -> ModelError:
    """One line for whatever huggingface_hub or its HTTP client raised."""
    from huggingface_hub import errors as hf

    what = f"{spec.repo}/{spec.file}@{spec.revision}"
    if _is_network_error(e):
        return DownloadError(
            f"cannot reach the model hub at {where} ({type(e).__name__}): no network? check it, a proxy or HF_ENDPOINT, {_hint(spec.name)}"
        )
    if type(e).__name__ == "OfflineModeIsEnabled":
        return DownloadError(f"offline mode is on (HF_HUB_OFFLINE): {what} cannot be pulled; unset it, {_hint(spec.name)}")
    if isinstance(e, hf.GatedRepoError):
        return DownloadError(f"{spec.repo} is gated: accept its licence on the hub and set HF_TOKEN, {_hint(spec.name)}")
    if isinstance(e, hf.RepositoryNotFoundError):
        return DownloadError(f"repository {spec.repo} not found at {where} (or private: set HF_TOKEN)")
    if isinstance(e, hf.RevisionNotFoundError):
        return DownloadError(f"revision {spec.revision!r} not found in {spec.repo} at {where}")
    if isinstance(e, hf.RemoteEntryNotFoundError):
        return DownloadError(f"file {spec.file!r} not found in {spec.repo}@{spec.revision} at {where}")
    if isinstance(e, hf.HfHubHTTPError):
        code = getattr(getattr(e, "response", None), "status_code", "?")
        if code == 401:
            return DownloadError(f"the hub at {where} refused {what} (HTTP 401): set HF_TOKEN to a valid token")
        return DownloadError(f"the hub at {where} answered HTTP {code} for {what}; try again later, {_hint(spec.name)}")
    if isinstance(e, OSError):
        return DownloadError(f"pulling {what} failed: {e.strerror or e}; check free space in {partial_dir().parent}")
    return DownloadError(f"pulling {what} from {where} failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")


def _present(spec: PullSpec) -> dict[str, Any] | None:
    old = get_entry(spec.name)
    if old is None or not entry_exists(old):
        return None
    if old.get("source") == "add" and spec.sha256 and old.get("sha256") == spec.sha256:
        return old  # brought by hand, and it is the pinned file
    if (
        old.get("repo") == spec.repo
        and old.get("file") == spec.file
        and spec.revision in (old.get("revision"), old.get("commit"))
    ):
        return old
    return None


def pull(spec_text: str, name: str | None = None, force: bool = False, say: Any = None) -> dict[str, Any]:
    """Pull a model (see the module docstring); returns its manifest entry with `name` and `status`
    ("pulled" or "present"). Raises `InputError` (bad spec, extra missing), `DownloadError` (network,
    offline, hub refusal: one line each), `ChecksumMismatchError` (the download is deleted)."""
    spec = parse_spec(spec_text, name)
    say = say or (lambda _msg: None)
    if not force and (old := _present(spec)) is not None:
        return {"name": spec.name, "status": "present", **old}
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise InputError("`localjudge models pull` needs the hub extra; run: pip install 'localjudge[hub]'") from None
    where = endpoint()
    if _offline():
        raise DownloadError(
            f"HF_HUB_OFFLINE is set: {spec.repo}/{spec.file} cannot be pulled offline; unset it, {_hint(spec.name)}"
        )
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    try:
        meta = get_hf_file_metadata(hf_hub_url(spec.repo, spec.file, revision=spec.revision, endpoint=where), timeout=15)
    except Exception as e:
        raise _hub_error(e, spec, where) from None
    if not meta.commit_hash or not meta.etag or meta.size is None:
        raise DownloadError(
            f"{where} did not answer like a model hub (no commit, ETag or size for {spec.file}); check HF_ENDPOINT"
        )
    pin = f"pinned {spec.sha256[:12]}…" if spec.sha256 else "no pin in the registry: the digest will be recorded"
    say(f"pulling {spec.repo}/{spec.file} @ {meta.commit_hash[:12]} ({meta.size / 1e6:,.1f} MB) from {where}; {pin}")
    staging = partial_dir() / spec.name
    from huggingface_hub import constants as hf_constants

    xet = hf_constants.HF_HUB_DISABLE_XET
    hf_constants.HF_HUB_DISABLE_XET = True  # plain HTTP: a killed transfer resumes from its bytes with a Range request
    try:
        staged = Path(
            hf_hub_download(
                spec.repo, spec.file, revision=meta.commit_hash, local_dir=staging, endpoint=where, force_download=force
            )
        )
    except Exception as e:
        raise _hub_error(e, spec, where) from None
    finally:
        hf_constants.HF_HUB_DISABLE_XET = xet
    say("verifying sha256 …")
    digest = sha256_file(staged)
    expected, source = (spec.sha256, "the registry's pin") if spec.sha256 else (None, "")
    if expected is None and SHA256_RE.match(meta.etag or ""):
        expected, source = meta.etag, "the hub's LFS digest"
    if expected and digest != expected:
        shutil.rmtree(staging, ignore_errors=True)
        raise ChecksumMismatchError(
            f"downloaded {spec.file} has sha256 {digest[:16]}…, expected {expected[:16]}… ({source}); the file was deleted: "
            "the hub's file differs from the pinned one or the transfer was corrupted; check the revision and pull again"
        )
    try:
        check_gguf(staged)
        gguf = gguf_metadata(staged)
    except ModelError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    dest = local_dir() / f"{spec.name}.gguf"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(staged, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(staged, dest)
    shutil.rmtree(staging, ignore_errors=True)
    remember_sha256(dest, digest)
    entry = {
        "path": str(dest),
        "sha256": digest,
        "pinned": bool(spec.sha256),
        "source": "hub",
        "endpoint": where,
        "repo": spec.repo,
        "file": spec.file,
        "revision": spec.revision,
        "commit": meta.commit_hash,
        "etag": meta.etag,
        "size": dest.stat().st_size,
        "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gguf": gguf,
    }
    put_entry(spec.name, entry)
    return {"name": spec.name, "status": "pulled", **entry}
