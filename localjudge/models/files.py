"""Model files that arrive by hand or from a hub: GGUF metadata, `models add`, `models info`.

`gguf_metadata(path)` reads what a GGUF file says about itself (architecture, training context
length, chat template, licence, quantisation) from its header (`gguf_header`, one pass that decodes only
those keys), without loading the weights. `add_model(path, name)` brings a file that arrived some other way (a USB stick
at an air-gapped site) into the models home: it is checked (GGUF header, the registry's pin when the
name has one), copied while its sha256 is computed (or, with `link=True`, used where it lies), and
recorded in the manifest, so `--model NAME` finds it. `model_info(name)` gathers all of it for
`localjudge models info`.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

from ..errors import ChecksumMismatchError, InputError, ModelNotFoundError, NotGGUFError
from ..paths import cache_home, models_home
from ..store.atomic import replacing, write_atomic
from .digest import sha256_file
from .manifest import entry_exists, entry_path, get_entry, put_entry, read_manifest
from .registry import check_gguf, registry, remember_sha256, resolve_model

NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")


def local_dir() -> Path:
    """Where pulled and added model files are kept (a folder of the models home)."""
    return models_home() / "local"


def default_name(filename: str) -> str:
    """A model name from a file name: the stem, lower-cased, other characters as '-'."""
    stem = Path(filename).name
    if stem.lower().endswith(".gguf"):
        stem = stem[:-5]
    name = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-.") or "model"
    return name[:80]


def check_name(name: str) -> str:
    """`name` when it can name a local model (lower-case letters, digits, '.', '_', '-'); else `InputError`."""
    if not NAME_RE.fullmatch(name):
        raise InputError(f"model name {name!r} is not valid; use lower-case letters, digits, '.', '_' and '-' (at most 80)")
    return name


def _quant_name(file_type: Any) -> str | None:
    try:
        import gguf

        return gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")
    except (ValueError, TypeError, ImportError):
        return None


def _meta_cache(path: Path) -> Path:
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:32]
    return cache_home() / "gguf" / f"{key}.json"


def gguf_metadata(path: str | Path) -> dict[str, Any]:
    """Architecture, context length, chat template, licence, name, size label and quantisation of a GGUF
    file, read from its header (`gguf_header.read_header`, which steps over the vocabulary; None where the file does
    not say). Cached by (path, size, mtime)."""
    check_gguf(path)
    cache = _meta_cache(Path(path))
    try:
        return json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    meta = _read_gguf(path)
    try:
        write_atomic(cache, json.dumps(meta, ensure_ascii=False, default=str), mkdir=True)
    except OSError:
        pass
    return meta


_KEYS = ("general.architecture", "general.name", "general.size_label", "general.license", "general.file_type")


def _read_gguf(path: str | Path) -> dict[str, Any]:
    from .gguf_header import read_header

    try:  # the architecture's context length is named after it: every `*.context_length` is kept, one is read
        header = read_header(path, lambda k: k in _KEYS or k == "tokenizer.chat_template" or k.endswith(".context_length"))
    except Exception as e:  # a truncated or damaged header raises many kinds of errors
        raise NotGGUFError(f"{str(path)!r}: cannot read its GGUF metadata ({type(e).__name__}: {e}); re-copy the file") from None
    get = header.values.get
    arch = get("general.architecture")
    template = get("tokenizer.chat_template")
    file_type = get("general.file_type")
    return {
        "architecture": arch,
        "name": get("general.name"),
        "size_label": get("general.size_label"),
        "license": get("general.license"),
        "context_length": get(f"{arch}.context_length") if arch else None,
        "chat_template": template if isinstance(template, str) else None,
        "file_type": file_type,
        "quantisation": _quant_name(file_type) if file_type is not None else None,
        "n_tensors": len(header.tensor_elements),
    }


def _copy_hashing(src: Path, dest: Path, pin: str | None, name: str) -> str:
    """Copy `src` to `dest` atomically while hashing it; a pinned digest that differs leaves nothing behind."""
    h = hashlib.sha256()
    with replacing(dest, mkdir=True) as tmp:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            while block := fin.read(1 << 22):
                h.update(block)
                fout.write(block)
        digest = h.hexdigest()
        if pin and digest != pin:
            raise ChecksumMismatchError(
                f"{src} has sha256 {digest[:16]}…, but model {name!r} is pinned to {pin[:16]}… in models.toml; "
                "not added: check that this is the right file"
            )
    return digest


def add_model(path: str | Path, name: str | None = None, link: bool = False, force: bool = False) -> dict[str, Any]:
    """Bring a GGUF file into the models home under `name` (default: from the file name) and record it.

    Copies the file (or, with `link`, records it where it lies: it must then stay there), computes its
    sha256 (checked against the registry's pin when `name` is a curated hub model) and reads its GGUF
    metadata. Returns the manifest entry (with `name`). Raises `InputError` for a name that is taken,
    `NotGGUFError` / `ModelNotFoundError` for a bad file, `ChecksumMismatchError` against a pin."""
    src = Path(path).expanduser()
    if not src.exists():
        raise ModelNotFoundError(f"model file {str(src)!r} does not exist; check the path")
    check_gguf(src)
    name = check_name(name or default_name(src.name))
    reg = registry().get("models", {})
    pin: str | None = None
    if name in reg:
        if "hub" not in reg[name]:
            raise InputError(f"model name {name!r} is a built-in registry model; choose another --name")
        pin = reg[name].get("sha256")
    old = get_entry(name)
    if old is not None and entry_exists(old) and not force:
        raise InputError(
            f"model {name!r} already exists ({entry_path(old)}); choose another --name or pass --force to replace it"
        )
    meta = gguf_metadata(src)
    if link:
        digest = sha256_file(src)
        if pin and digest != pin:
            raise ChecksumMismatchError(
                f"{src} has sha256 {digest[:16]}…, but model {name!r} is pinned to {pin[:16]}… in models.toml; not added"
            )
        dest = src.resolve()
    else:
        dest = local_dir() / f"{name}.gguf"
        digest = _copy_hashing(src, dest, pin, name)
    remember_sha256(dest, digest)
    entry = {
        "path": str(dest),
        "sha256": digest,
        "pinned": bool(pin),
        "source": "add",
        "added_from": str(src.resolve()),
        "linked": link,
        "size": dest.stat().st_size,
        "added_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gguf": meta,
    }
    put_entry(name, entry)
    return {"name": name, **entry}


_BIDI = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C])


def printable(value: Any, keep: str = "") -> Any:
    """`value` with every control character (C0, DEL, C1, bidi overrides) removed from its text, through lists
    and dicts: a model file's metadata is untrusted, and an escape sequence in `general.name` must not
    reach the terminal. `keep`: controls to leave (JSON output keeps newlines and tabs, escaped by JSON)."""
    if isinstance(value, str):
        if value.isprintable():
            return value
        return "".join(c for c in value if c in keep or not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or ord(c) in _BIDI))
    if isinstance(value, dict):
        return {printable(k, keep): printable(v, keep) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable(v, keep) for v in value]
    return value


def _human(n: int | None) -> str | None:
    if n is None:
        return None
    x = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if x < 1000 or unit == "TB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.2f} {unit}"
        x /= 1000
    return None  # pragma: no cover


def _converted_from(source: dict[str, Any] | None) -> str | None:
    """'NAME (TYPE, sha256 PREFIX…)' of the model a `models optimize` conversion was made from, else None."""
    if not source:
        return None
    digest = f", sha256 {source['sha256'][:16]}…" if source.get("sha256") else ""
    return f"{source.get('model')} ({source.get('type')}{digest})"


def model_info(name: str) -> dict[str, Any]:
    """Everything known about a model: where its file is, size, digest and whether it is pinned, the
    registry's description (hub repo, quantisation, licence) and the GGUF metadata. A curated hub model
    that is not downloaded yet gets its registry facts and `downloaded: False`."""
    reg = registry().get("models", {})
    entry = reg.get(name, {})
    if "hub" in entry and not entry_exists(get_entry(name)):
        return {
            "name": name,
            "downloaded": False,
            "description": entry.get("description"),
            "hub": entry.get("hub"),
            "file": entry.get("file"),
            "revision": entry.get("revision", "main"),
            "size": entry.get("size"),
            "quantisation": entry.get("quantisation"),
            "license": entry.get("license"),
            "sha256": entry.get("sha256"),
            "pinned": bool(entry.get("sha256")),
            "judges": entry.get("judges", []),
            "pull": f"localjudge models pull {name}",
        }
    info = resolve_model(name)
    p = Path(info.path)
    local = read_manifest().get(info.name, {}) if info.registered else {}
    meta = local.get("gguf") or gguf_metadata(p)
    size = p.stat().st_size if p.exists() else None
    template = meta.get("chat_template")
    return {
        "name": info.name,
        "downloaded": True,
        "path": str(p),
        "size_bytes": size,
        "size": _human(size),
        "description": info.description or entry.get("description"),
        "license": info.license or meta.get("license"),
        "sha256": info.sha256 or local.get("sha256"),
        "digest_source": info.digest_source if info.sha256 else "none (an unregistered file: nothing to compare with)",
        "pinned": bool(info.sha256) and info.digest_source == "models.toml",
        "source": local.get("source") or ("registry" if info.registered else "path"),
        "converted_from": _converted_from(local.get("optimized_from")),
        "hub": local.get("repo") or entry.get("hub"),
        "file": local.get("file") or entry.get("file"),
        "commit": local.get("commit"),
        "architecture": meta.get("architecture"),
        "context_length": meta.get("context_length"),
        "quantisation": meta.get("quantisation") or entry.get("quantisation"),
        "gguf_name": meta.get("name"),
        "size_label": meta.get("size_label"),
        "chat_template": "none (use --chat-template raw)"
        if not template
        else f"from the GGUF ({len(template)} characters): {template[:60]!r}…",
        "registry_chat_template": info.chat_template,
    }
