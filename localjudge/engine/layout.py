"""Weight layouts: a GGUF rewritten in a weight type that this CPU's llama.cpp computes faster (`models optimize`).

llama.cpp's CPU backend repacks some weight types into interleaved layouts (Q4_0, IQ4_NL with AVX2 or NEON:
`REPACK = 1` in its system info) and multiplies BF16 natively where the CPU has AVX512_BF16; Q4_1, Q5_0, Q5_1
and F32 get neither, so the same weights run 1.6–2× slower in prompt evaluation in those types (measured in
docs/models.md, "Weight layouts"). The conversion is llama.cpp's own quantizer (`llama_model_quantize` with
`allow_requantize`): a widening (BF16, F16: each block dequantised, stored in 16 bits: near-lossless) or a
requantization (Q4_0: the file stays small, rounding error is added).

The target type is chosen by a rule from the CPU's features, the source type and the model's size
(`choose_type`, written from the measurements), never by a timing, so the same machine always makes the same file; `measure` then reports prompt and decode speed before
and after. Conversion is atomic (a temporary file beside the target, renamed when complete; a crash leaves no
half file under the target's name and the next conversion removes its temporary files), checked for disk space
first, and serialised by a lock file.

`fast_layout` applies the same rule to a registry model marked `layout = "auto"` (the default model, which ships as
Q4_1): converted once on first use into the models home and loaded in that layout from then on, unless
$LOCALJUDGE_LAYOUT is `shipped`. A user's own file is never converted unless asked (`models optimize`).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..errors import ChecksumMismatchError, InputError, ModelError, StorageError
from ..jsonio import loads
from ..models.digest import sha256_file
from ..models.registry import ModelInfo, check_sha256, remember_sha256, sha256_of
from ..store.atomic import replacing, write_atomic
from .llama_amx import amx_build, no_amx_weights
from .llama_lock import LLAMA_LOCK, system_info
from .llama_log import LLAMA_ERRORS, quiet_llama_logs

# llama.cpp's `llama_ftype` numbers of the types a conversion may write, and their bytes per weight (disk bound)
TYPES: dict[str, int] = {"F16": 1, "Q4_0": 2, "Q8_0": 7, "IQ4_NL": 25, "BF16": 32}
BYTES_PER_WEIGHT: dict[str, float] = {"F16": 2.0, "BF16": 2.0, "Q8_0": 34 / 32, "Q4_0": 18 / 32, "IQ4_NL": 18 / 32}
# types llama.cpp's CPU backend neither repacks nor has fast kernels for: what `optimize` converts away from
SLOW_TYPES = frozenset({"Q4_1", "Q5_0", "Q5_1", "ALL_F32", "F32"})
# widening to 16 bits costs two bytes a weight: done for models up to this many weights (a 7B model would need
# 14 GB and decode, bound by memory bandwidth, 3.5x slower than in 4 bits); larger ones are requantized to Q4_0
WIDEN_MAX_WEIGHTS = 600_000_000
PROMPT_TOKENS = 512
DECODE_TOKENS = 32


class Speed(BaseModel):
    """Prompt and decode speed of one file, measured once (tokens a second; for printing, never for a choice)."""

    prompt_tok_s: float
    decode_tok_s: float
    threads: int


def cpu_features(llama_cpp: Any) -> frozenset[str]:
    """The features llama.cpp's CPU backend reports as on (`AVX2`, `AVX512_BF16`, `NEON`, `REPACK`, ...)."""
    try:
        info = system_info(llama_cpp).decode("utf-8", "replace")
    except (AttributeError, OSError):
        return frozenset()
    on = set()
    for part in info.replace("|", "\n").splitlines():
        key, _, value = part.partition("=")
        if value.strip() == "1":
            on.add(key.strip().split(":")[-1].strip())
    if amx_build(llama_cpp):
        on.add("AMX_BUILD")  # weights load without extra buffer types there (llama_amx.py): no repacking
    return frozenset(on)


def choose_type(features: frozenset[str], n_weights: int, source_type: str | None) -> str:
    """The weight type to convert to on a CPU with `features`, by rule (docs/models.md, 'Weight layouts', measured):

    - an F32 source is widened-to-16-bit territory already: BF16 where the CPU multiplies BF16 natively, else F16
      (half the size, near-lossless);
    - a 4- or 5-bit source goes to Q4_0 where llama.cpp repacks it (REPACK, extra buffer types on): the same
      size, the fastest prompt and decode measured (rounding error added: measured beside the speed);
    - otherwise a model small enough to widen goes to BF16 or F16 (near-lossless, 2.8x the file)."""
    bf16_or_f16 = "BF16" if "AVX512_BF16" in features else "F16"
    if source_type in ("F32", "ALL_F32"):
        return bf16_or_f16
    if "REPACK" in features and "AMX_BUILD" not in features:
        return "Q4_0"
    if n_weights <= WIDEN_MAX_WEIGHTS:
        return bf16_or_f16
    raise InputError(
        "no faster weight type is known for this CPU and a model this size; pass --type (one of "
        f"{', '.join(TYPES)}) to convert anyway"
    )


def n_weights(path: str | Path) -> int:
    """The number of weights in a GGUF file's tensors (from its header; nothing is loaded)."""
    from ..models.gguf_header import read_header

    try:
        header = read_header(path, lambda _: False)
    except Exception as e:  # a damaged header raises many kinds of errors
        raise ModelError(f"{str(path)!r}: cannot read its tensors ({type(e).__name__}: {e}); re-copy the file") from None
    return sum(header.tensor_elements)


def _check_space(dest: Path, need: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest.parent).free
    if free < need:
        raise StorageError(
            f"converting needs about {need / 1e6:,.0f} MB free in {dest.parent} and {free / 1e6:,.0f} MB are; "
            "free some space or set LOCALJUDGE_MODELS_HOME to a larger disk"
        )


@contextlib.contextmanager
def _locked(dest: Path) -> Iterator[None]:
    """One conversion to `dest` at a time; inside the lock, temporary files a crashed conversion left are removed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        for stale in dest.parent.glob(f".{dest.name}.*.tmp"):
            stale.unlink(missing_ok=True)
        yield


def check_type(type_name: str) -> str:
    """`type_name` as llama.cpp names it (upper case) when a conversion may write it; else `InputError`."""
    if type_name.upper() not in TYPES:
        raise InputError(f"--type {type_name!r} is not a type localjudge converts to; use one of {', '.join(TYPES)}")
    return type_name.upper()


def convert(src: str | Path, dest: str | Path, type_name: str, threads: int = 0) -> str:
    """Write `src` in weight type `type_name` to `dest` (atomically, checked for disk space); returns the new
    file's sha256. Raises `InputError` for an unknown type, `StorageError` for too little space, `ModelError` when llama.cpp fails."""
    with _locked(Path(dest)):
        return _convert_locked(Path(src), Path(dest), type_name, threads)


def _convert_locked(src: Path, dest: Path, type_name: str, threads: int) -> str:
    """`convert`'s work, for a caller that holds `_locked(dest)`."""
    ftype = TYPES[check_type(type_name)]
    import llama_cpp

    quiet_llama_logs(llama_cpp, verbose=False)
    need = int(n_weights(src) * BYTES_PER_WEIGHT[type_name.upper()] * 1.05) + (16 << 20)
    _check_space(dest, need)
    with replacing(dest) as tmp:  # llama.cpp writes the temporary file; renamed only when complete
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype
        params.allow_requantize = True
        params.nthread = threads
        with LLAMA_LOCK:  # llama.cpp's global state (its backends, logs) is not for two threads at once
            rc = llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(), ctypes.byref(params))
        if rc != 0:
            said = f": {LLAMA_ERRORS[-1]}" if LLAMA_ERRORS else ""
            raise ModelError(f"llama.cpp could not convert {src} to {type_name} (code {rc}){said}")
        return sha256_file(tmp)


_TEXT = (
    "A judge reads the question, the context and the answer, and says whether every claim of the answer is supported "
    "by the context. It quotes the sentence that supports each claim, or says that none does. "
)


def measure(path: str | Path, threads: int) -> Speed:
    """Prompt speed over a fixed 512-token text and greedy decode speed over 32 tokens, one load of `path` with
    `threads` threads (the better of two prompt passes), holding `LLAMA_LOCK`. A report for people: nothing is chosen by it."""
    import llama_cpp

    quiet_llama_logs(llama_cpp, verbose=False)
    with LLAMA_LOCK:  # a load and decodes of its own: no other engine of the process runs meanwhile
        with no_amx_weights(llama_cpp):
            llm = llama_cpp.Llama(str(path), n_ctx=1024, n_batch=512, n_threads=threads, verbose=False)
        try:
            tokens = llm.tokenize((_TEXT * 40).encode())[:PROMPT_TOKENS]
            best = float("inf")
            for _ in range(2):
                llm.reset()
                t = time.perf_counter()
                llm.eval(tokens)
                best = min(best, time.perf_counter() - t)
            llm.reset()
            llm.eval(tokens[:64])
            t = time.perf_counter()
            for _ in range(DECODE_TOKENS):
                llm.eval([llm.sample(temp=0.0)])
            decode = DECODE_TOKENS / (time.perf_counter() - t)
        finally:
            llm.close()
    return Speed(prompt_tok_s=round(len(tokens) / best, 1), decode_tok_s=round(decode, 1), threads=threads)


class Optimized(BaseModel):
    """What `optimize` made: the new local model's name and file, the types, the digests and both speeds."""

    name: str
    path: str
    source: str  # the model it was converted from (name or file)
    source_type: str | None
    type: str
    sha256: str
    size: int
    chose: str  # "--type" or the rule's reason
    before: Speed | None = None
    after: Speed | None = None


def optimize(
    model: str,
    type_name: str | None = None,
    name: str | None = None,
    force: bool = False,
    threads: int | None = None,
    speeds: bool = True,
) -> Optimized:
    """Convert `model` (a registry name, a local model or a .gguf path) to `type_name` (default: `choose_type` for
    this CPU) and record the result as a local model `name` (default: NAME-TYPE), which `--model` then finds; with
    `speeds`, measure prompt and decode speed of both files. The source file is never changed."""
    import llama_cpp

    from ..models.files import check_name, default_name, gguf_metadata, local_dir
    from ..models.manifest import entry_exists, entry_path, get_entry, put_entry
    from ..models.registry import check_gguf, registry, resolve_model
    from .threads import default_threads

    info = resolve_model(model)
    check_gguf(info.path)
    source_type = gguf_metadata(info.path).get("quantisation")
    if type_name is None:
        if source_type not in SLOW_TYPES:
            raise InputError(
                f"{info.name} is {source_type}, a layout llama.cpp already computes fast on the CPU; nothing to do "
                f"(pass --type, one of {', '.join(TYPES)}, to convert anyway)"
            )
        target = choose_type(cpu_features(llama_cpp), n_weights(info.path), source_type)
        chose = f"the rule for this CPU ({target}: docs/models.md, 'Weight layouts')"
    else:
        target = check_type(type_name)
        chose = "--type"
    if target == source_type:
        raise InputError(f"{info.name} is already {target}; nothing to convert")
    new = check_name(name or f"{default_name(info.name)}-{target.lower().replace('_', '-')}")
    if new in registry().get("models", {}):
        raise InputError(f"model name {new!r} is a registry model; choose another --name")
    old = get_entry(new)
    if old is not None and entry_exists(old) and not force:
        raise InputError(f"model {new!r} already exists ({entry_path(old)}); pass --force to convert again or choose --name")
    n_threads = threads or default_threads()
    dest = local_dir() / f"{new}.gguf"
    digest = convert(info.path, dest, target, n_threads)
    remember_sha256(dest, digest)
    entry = {
        "path": str(dest),
        "sha256": digest,
        "pinned": False,
        "source": "optimize",
        "optimized_from": {"model": info.name, "path": info.path, "sha256": info.sha256, "type": source_type},
        "type": target,
        "chat_template": info.chat_template,
        "llama_cpp": llama_cpp.__version__,
        "size": dest.stat().st_size,
        "added_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gguf": gguf_metadata(dest),
    }
    put_entry(new, entry)
    out = Optimized(
        name=new,
        path=str(dest),
        source=info.name,
        source_type=source_type,
        type=target,
        sha256=digest,
        size=entry["size"],
        chose=chose,
    )
    if speeds:
        out.before = measure(info.path, n_threads)
        out.after = measure(dest, n_threads)
    return out


LAYOUT_ENV = "LOCALJUDGE_LAYOUT"  # "shipped": a registry model with layout = "auto" loads its file as it ships


def layout_choice(given: str | None = None) -> str:
    """`given` when set (the `layout` option), else $LOCALJUDGE_LAYOUT, else `auto`: `auto` or `shipped`;
    `InputError` for any other value."""
    value = (given or os.environ.get(LAYOUT_ENV, "auto")).strip().lower() or "auto"
    if value not in ("auto", "shipped"):
        raise InputError(
            f"{LAYOUT_ENV}={value!r} is not a layout choice; use auto (the default: convert for this CPU once) or shipped"
        )
    return value


def fast_layout(info: ModelInfo, choice: str | None = None) -> ModelInfo:
    """`info` itself unless its registry entry says `layout = "auto"` and the choice (`choice`, the engine's `layout`
    option; else $LOCALJUDGE_LAYOUT) is not `shipped`;
    then the same model in the weight type `choose_type` picks for this CPU, converted once into the models home
    (`layouts/`, named by the model, the type, the shipped file's pinned digest and the llama.cpp version) and
    reused after: its path, and the digest recorded at conversion as the model's identity (results, cache keys).
    The shipped file is checked against its pin before it is converted; the conversion is reported in one line on
    stderr. A conversion that fails (a full disk, an unwritable models home, llama.cpp refusing) leaves no file and
    says so in one line, and the shipped file is used; one cut off (power) leaves a temporary file the next
    conversion removes, or a converted file without its record, which is converted again."""
    if info.entry.get("layout") != "auto" or layout_choice(choice) == "shipped":
        return info
    planned = _plan(info)
    if planned is None:
        return info
    target, dest, source_type, features = planned
    pin = info.sha256 or ""
    made = _recorded(dest, dest.with_suffix(".json"))
    if made is None:
        try:
            made = _convert_once(info, dest, target, source_type, features)
        except ChecksumMismatchError:
            raise  # a replaced shipped file is refused, converted or not
        except (StorageError, ModelError, OSError) as e:  # a full disk, an unwritable home: the shipped file
            sys.stderr.write(
                f"localjudge: could not convert {info.name} for this CPU ({e}); using the shipped {source_type} file\n"
            )
            return info
    return info.model_copy(
        update={
            "path": str(dest),
            "sha256": made["sha256"],
            "digest_source": f"recorded when converted from the shipped {source_type} file ({pin[:12]}…) to {target}",
            "entry": {**info.entry, "converted": made, "shipped_path": info.path},
        }
    )


def _plan(info: ModelInfo) -> tuple[str, Path, str, frozenset[str]] | None:
    """(the type the rule picks for this CPU, the converted file's path, the source type, the CPU features) for a
    model whose shipped type is slow and for which the rule has a faster type here, else None. Nothing is converted."""
    import llama_cpp

    source_type = info.entry.get("quantisation")
    if source_type not in SLOW_TYPES:
        return None
    features = cpu_features(llama_cpp)
    repacks = "REPACK" in features and "AMX_BUILD" not in features  # then the size does not enter the rule
    try:
        target = choose_type(features, 0 if repacks else n_weights(info.path), source_type)
    except InputError:  # a model too big to widen on a CPU without repacking: no faster type known, the shipped file
        return None
    from ..models.files import default_name
    from ..paths import models_home

    pin = info.sha256 or ""
    stem = f"{default_name(info.name)}-{target.lower().replace('_', '-')}-{pin[:12]}-llama{llama_cpp.__version__}"
    return target, models_home() / "layouts" / f"{stem}.gguf", str(source_type), features


def layout_status(info: ModelInfo, choice: str | None = None) -> str | None:
    """For `models info`: how a registry model marked `layout = "auto"` loads on this machine (converted, to be
    converted on first use, or shipped as the choice says), without converting anything; None for other models."""
    if info.entry.get("layout") != "auto":
        return None
    if layout_choice(choice) == "shipped":
        return f"shipped file ({LAYOUT_ENV}=shipped)"
    planned = _plan(info)
    if planned is None:
        return "shipped file (a fast type already, or none faster known for this CPU)"
    target, dest, source_type, _ = planned
    made = _recorded(dest, dest.with_suffix(".json"))
    if made is None:
        return f"converted from {source_type} to {target} for this CPU on first use, into {dest}"
    return (
        f"converted from {source_type} to {target} for this CPU: {dest} (sha256 {made['sha256'][:16]}…, recorded at conversion)"
    )


def _convert_once(info: ModelInfo, dest: Path, target: str, source_type: str, features: frozenset[str]) -> dict[str, Any]:
    """Under `dest`'s lock: the record of `info`'s file converted to `target` at `dest`, converting it (the shipped file
    checked against its pin first, one line on stderr) unless another process did meanwhile."""
    record = dest.with_suffix(".json")
    with _locked(dest):
        made = _recorded(dest, record)
        if made is not None:
            return made
        if info.sha256:
            check_sha256(info, sha256_of(info.path))
        from .threads import default_threads

        digest = _convert_locked(Path(info.path), dest, target, default_threads())
        made = {
            "sha256": digest,
            "type": target,
            "source_type": source_type,
            "source_sha256": info.sha256,
            "cpu_features": sorted(features),
        }
        write_atomic(record, json.dumps(made, indent=2))
    remember_sha256(dest, digest)
    sys.stderr.write(
        f"localjudge: {info.name} converted once from {source_type} to {target}, the layout this CPU computes fastest "
        f"(docs/models.md, 'Weight layouts'): {dest}; {LAYOUT_ENV}=shipped loads the shipped file\n"
    )
    return made


def _recorded(dest: Path, record: Path) -> dict[str, Any] | None:
    """The conversion record beside `dest` when both are there (a conversion completes both), else None."""
    if not dest.exists():
        return None
    try:
        made = loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return made if isinstance(made, dict) and isinstance(made.get("sha256"), str) else None


__all__ = [
    "LAYOUT_ENV",
    "TYPES",
    "Optimized",
    "Speed",
    "check_type",
    "choose_type",
    "convert",
    "cpu_features",
    "fast_layout",
    "layout_choice",
    "layout_status",
    "measure",
    "n_weights",
    "optimize",
]
