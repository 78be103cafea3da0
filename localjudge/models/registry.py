"""The model registry (localjudge/models/models.toml, plus a user's $LOCALJUDGE_MODELS_TOML) and model-file checks.

`resolve_model(None | name | path)` → `ModelInfo` with a local path. Registry files live inside
installed packages (found with `importlib.util.find_spec`, without importing them) or are
concatenated from chunk packages into the cache; nothing is downloaded here. Registry entries with
`hub = "owner/repo"` name a file on a model hub that only `localjudge models pull` fetches (hub.py);
pulled and added models are found through the manifest in the models home (manifest.py).
`check_gguf` catches a missing, non-GGUF or truncated file before llama.cpp sees it; `sha256_of`
caches checksums by (path, size, mtime).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import struct
import tomllib
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import ChecksumMismatchError, ModelNotFoundError, NotGGUFError
from ..paths import cache_home, models_home
from ..store.atomic import replacing, write_atomic
from .digest import sha256_file
from .manifest import entry_path, read_manifest


class ModelInfo(BaseModel):
    """A model resolved to a local file: name, path, expected checksum, licence, chat template."""

    name: str  # registry name, or the file name for a plain path
    path: str
    sha256: str | None = None  # expected checksum (registry) — None for unregistered files
    license: str | None = None
    chat_template: str = "gguf"  # "gguf" or "raw"
    description: str = ""
    registered: bool = False
    entry: dict[str, Any] = {}
    # where `sha256` comes from: the registry's pin, or the digest recorded when the file was pulled or added
    digest_source: str = "models.toml"


def registry() -> dict[str, Any]:
    """The parsed models.toml."""
    toml = resources.files("localjudge.models").joinpath("models.toml")
    reg = tomllib.loads(toml.read_text(encoding="utf-8"))
    _anchor(reg.get("models", {}), Path(str(toml)).parent)
    extra = os.environ.get("LOCALJUDGE_MODELS_TOML")
    if extra:  # a user's own registry: its entries (and default) win over the built-in ones
        try:
            user = tomllib.loads(Path(extra).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ModelNotFoundError(f"LOCALJUDGE_MODELS_TOML={extra!r} cannot be read ({e}); fix or unset it") from None
        for name, entry in user.get("models", {}).items():
            if "path" in entry:
                entry.setdefault("file", entry["path"])
            reg.setdefault("models", {})[name] = entry
        _anchor(user.get("models", {}), Path(extra).expanduser().resolve().parent)
        reg["default"] = user.get("default", reg["default"])
    return reg


def _anchor(entries: dict[str, Any], folder: Path) -> None:
    """A plain-file entry's relative `file` made absolute against the folder of the models.toml that names it
    (entries in a package, in parts or on a hub keep theirs: those are relative to the package or the models home)."""
    for entry in entries.values():
        if any(k in entry for k in ("package", "parts", "hub")) or "file" not in entry:
            continue
        path = Path(entry["file"]).expanduser()
        if not path.is_absolute():
            entry["file"] = str(folder / path)


def _package_dir(package: str) -> Path | None:
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _locate(name: str, entry: dict[str, Any]) -> Path:
    if "package" in entry:
        pkg = _package_dir(entry["package"])
        if pkg is None:
            raise ModelNotFoundError(
                f"model {name!r} lives in Python package {entry['package']!r}, which is not installed; "
                f"run: pip install {entry['package'].replace('_', '-')}"
            )
        return pkg / entry["file"]
    if "parts" in entry:
        target = models_home() / entry["file"]
        if target.exists() and target.stat().st_size > 0:
            return target
        chunks = []
        for pkg_name, rel in entry["parts"]:
            pkg = _package_dir(pkg_name)
            if pkg is None:
                raise ModelNotFoundError(
                    f"model {name!r} needs package {pkg_name!r}; run: pip install {pkg_name.replace('_', '-')}"
                )
            chunks.append(pkg / rel)
        with replacing(target, mkdir=True) as tmp, open(tmp, "wb") as out:
            for c in chunks:
                with open(c, "rb") as src:
                    while block := src.read(1 << 22):
                        out.write(block)
        return target
    return Path(entry["file"]).expanduser()  # absolute: `registry()` anchored it at its models.toml


def _from_manifest(name: str, entry: dict[str, Any], pin: dict[str, Any] | None = None) -> ModelInfo:
    """A pulled or added model: its file in the models home (or where it was linked from)."""
    pin = pin or {}
    meta = entry.get("gguf") or {}
    how = {"add": "add", "optimize": "conversion"}.get(entry.get("source", ""), "pull")
    return ModelInfo(
        name=name,
        path=str(entry_path(entry)),
        sha256=pin.get("sha256") or entry.get("sha256"),
        license=pin.get("license") or meta.get("license"),
        chat_template=pin.get("chat_template") or entry.get("chat_template", "gguf"),
        description=pin.get("description", ""),
        registered=True,
        entry={**entry, **({"registry": pin} if pin else {})},
        digest_source="models.toml" if pin.get("sha256") else f"recorded on first {how} (unpinned)",
    )


def _not_downloaded(name: str, entry: dict[str, Any]) -> ModelNotFoundError:
    size = f", {entry['size']}" if entry.get("size") else ""
    return ModelNotFoundError(
        f"model {name!r} is not downloaded (hub {entry['hub']}/{entry['file']}{size}); run: localjudge models pull {name} "
        f"(or copy the file here and run: localjudge models add PATH --name {name})"
    )


def resolve_model(model: str | os.PathLike | None = None) -> ModelInfo:
    """A registry name, a pulled or added model's name, a path to a .gguf, or None for the default model → `ModelInfo`.

    A registry entry that names a hub file resolves only once `localjudge models pull` (or `models add`)
    has put the file in the models home; nothing is downloaded here."""
    reg = registry()
    models = reg.get("models", {})
    if model is None:
        model = reg["default"]
    model = str(model)
    if model in models and "hub" in models[model]:
        got = read_manifest().get(model)
        if got is None or not entry_path(got).exists():
            raise _not_downloaded(model, models[model])
        return _from_manifest(model, got, models[model])
    if model in models:
        entry = models[model]
        return ModelInfo(
            name=model,
            path=str(_locate(model, entry)),
            sha256=entry.get("sha256"),
            license=entry.get("license"),
            chat_template=entry.get("chat_template", "gguf"),
            description=entry.get("description", ""),
            registered=True,
            entry=entry,
        )
    p = Path(model).expanduser()
    if p.suffix.lower() == ".gguf" or p.exists() or os.sep in model:
        if not p.exists():
            raise ModelNotFoundError(
                f"model file {str(p)!r} does not exist; check the path or use a registry name ({', '.join(models)})"
            )
        return ModelInfo(name=p.name, path=str(p.resolve()))
    local = read_manifest()
    if model in local:
        if not entry_path(local[model]).exists():
            raise ModelNotFoundError(
                f"model {model!r} was recorded at {entry_path(local[model])}, which no longer exists; pull or add it again"
            )
        return _from_manifest(model, local[model])
    known = [*models, *(k for k in local if k not in models)]
    close = difflib.get_close_matches(model, known, n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(known)}"
    raise ModelNotFoundError(f"unknown model {model!r}: not a registry name nor a .gguf path{hint}")


def check_gguf(path: str | os.PathLike) -> None:
    """Fail fast, with a one-line fix, on a missing, non-GGUF or obviously truncated file."""
    p = Path(path)
    if not p.exists():
        raise ModelNotFoundError(f"model file {str(p)!r} does not exist; check the path")
    if p.is_dir():
        raise NotGGUFError(f"{str(p)!r} is a directory, not a .gguf file; pass the model file itself")
    size = p.stat().st_size
    with open(p, "rb") as f:
        head = f.read(24)
    if len(head) < 4 or head[:4] != b"GGUF":
        raise NotGGUFError(
            f"{str(p)!r} is not a GGUF file (magic bytes {head[:4]!r}); convert it with llama.cpp's "
            "convert_hf_to_gguf.py or pick a .gguf model"
        )
    if len(head) < 24 or size < 1024:
        raise NotGGUFError(f"{str(p)!r} is truncated ({size} bytes); re-copy or re-install the model file")
    version, n_tensors = struct.unpack("<IQ", head[4:16])
    if version not in (1, 2, 3) or n_tensors > 1_000_000:
        raise NotGGUFError(
            f"{str(p)!r} has an unsupported GGUF header (version {version}); update llama-cpp-python or re-convert the model"
        )


def check_sha256(info: ModelInfo, digest: str) -> None:
    """Raise when a registered model's file does not have the registry's checksum."""
    if info.sha256 and digest != info.sha256:
        raise ChecksumMismatchError(
            f"model {info.name!r} at {info.path} has sha256 {digest[:16]}…, expected "
            f"{info.sha256[:16]}… ({info.digest_source}); the file is corrupt or replaced: reinstall it"
        )


def _sha_cache(p: Path) -> Path:
    st = p.stat()
    key = hashlib.sha256(f"{p}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    return cache_home() / "sha256" / f"{key}.json"


def remember_sha256(path: str | os.PathLike, digest: str) -> None:
    """Record a digest just computed while writing `path` (a pull or an add), so the first load does not hash it again."""
    p = Path(path).resolve()
    try:
        write_atomic(_sha_cache(p), json.dumps({"path": str(p), "sha256": digest}), mkdir=True)
    except OSError:
        pass


def sha256_of(path: str | os.PathLike) -> str:
    """sha256 of a file, cached by (path, size, mtime) so a run pays for it once."""
    p = Path(path).resolve()
    cache = _sha_cache(p)
    try:
        return json.loads(cache.read_text())["sha256"]
    except (OSError, ValueError, KeyError):
        pass
    digest = sha256_file(p)
    try:
        write_atomic(cache, json.dumps({"path": str(p), "sha256": digest}), mkdir=True)
    except OSError:
        pass
    return digest


def verify_model(model: str | None = None) -> tuple[ModelInfo, str]:
    """Recompute the file's sha256 (no cache) and compare with the registry; raises on mismatch."""
    info = resolve_model(model)
    check_gguf(info.path)
    digest = sha256_file(info.path)
    check_sha256(info, digest)
    return info, digest
