"""Compile an untrusted format's token automaton in a child process with a time and a memory limit.

The static limits of `JSONSchemaFormat` (size, depth, properties, enum values, regex length) refuse
most pathological schemas at once, but what an automaton costs to build is only known by building
it. So the server never compiles a client's schema in its own process: a child process
(`python -m localjudge.constraints.sandbox`) loads the model's vocabulary from a file, sets `RLIMIT_AS`
(address space) and `RLIMIT_CPU`, compiles with `automaton.compile_regex` — which writes the
disk cache — and exits; the parent kills it when the wall-clock limit passes. The engine then loads
the automaton from the disk cache. A schema over either limit is refused (HTTP 400) and the
server's own memory never sees it.
"""

from __future__ import annotations

import asyncio
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .automaton import TokenVocab, cache_path

EXIT_MEMORY = 3
EXIT_CONSTRAINT = 4
EXIT_VOCAB = 5


@dataclass
class CompileLimits:
    """Wall-clock seconds (also the CPU-time limit) and address-space bytes one compile may use; None: no limit."""

    seconds: float | None = 30.0
    memory_bytes: int | None = 2 << 30


class CompileRefused(Exception):
    """The automaton could not be built within the limits (or the vocabulary cannot express the format)."""


def save_vocab(vocab: TokenVocab, directory: Path) -> Path:
    """Write the vocabulary (pieces and EOS ids) once for the children to read; returns its path."""
    import numpy as np

    from ..store.atomic import replacing

    path = directory / f"vocab-{vocab.hash}.npz"
    if not path.exists():
        lengths = np.array([len(p) for p in vocab.pieces], dtype=np.int64)
        blob = np.frombuffer(b"".join(vocab.pieces), dtype=np.uint8)
        with replacing(path, mkdir=True) as tmp, open(tmp, "wb") as f:
            np.savez(f, lengths=lengths, blob=blob, eos=np.array(vocab.eos_ids, dtype=np.int64))
    return path


def load_vocab(path: Path) -> TokenVocab:
    """The vocabulary `save_vocab` wrote."""
    import numpy as np

    with np.load(path) as z:
        lengths, blob, eos = z["lengths"], z["blob"].tobytes(), [int(x) for x in z["eos"]]
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return TokenVocab(pieces=[blob[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)], eos_ids=eos)


async def compile_in_child(regex: str, vocab_path: Path, vocab_hash: str, limits: CompileLimits) -> float:
    """Build the automaton of `regex` in a child process under `limits` (it lands in the disk cache);
    returns the seconds it took. `CompileRefused` names the limit that was hit."""
    target = cache_path(regex, vocab_hash)
    if target.exists():
        return 0.0
    args = [sys.executable, "-m", "localjudge.constraints.sandbox", str(vocab_path), vocab_hash]
    args += [str(limits.memory_bytes or 0), str(int(limits.seconds or 0))]
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(regex.encode("utf-8")), timeout=limits.seconds)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise CompileRefused(
            f"compiling its constraint took longer than the server's limit of {limits.seconds:g} s; simplify the schema "
            "(fewer free-form objects, enum values or properties)"
        ) from None
    finally:
        if proc.returncode is None:  # cancelled: never leave a child behind
            proc.kill()
            await proc.wait()
    dt = time.perf_counter() - t0
    msg = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
    if proc.returncode == EXIT_CONSTRAINT:
        raise CompileRefused(msg[0] if msg else "the model's vocabulary cannot express this format")
    if proc.returncode != 0 or not target.exists():
        mb = (limits.memory_bytes or 0) >> 20
        if proc.returncode == EXIT_MEMORY:  # MemoryError under the address-space limit: memory, not CPU
            raise CompileRefused(
                f"compiling its constraint needed more than the server's limit of {mb} MB of memory; simplify the schema"
            )
        if (proc.returncode or 0) < 0:  # killed: SIGXCPU/SIGKILL at the CPU limit (or the kernel's, out of memory)
            raise CompileRefused(
                f"compiling its constraint was stopped at the server's limit of {limits.seconds:g} s of CPU "
                f"({mb} MB of memory); simplify the schema"
            )
        raise RuntimeError(f"the constraint compiler exited with code {proc.returncode}: {' '.join(msg) or 'no message'}")
    return dt


def _child(argv: list[str]) -> int:
    vocab_path, vocab_hash, mem, secs = argv[0], argv[1], int(argv[2]), int(argv[3])
    if mem:
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    if secs:
        resource.setrlimit(resource.RLIMIT_CPU, (secs + 1, secs + 2))
    regex = sys.stdin.buffer.read().decode("utf-8")
    try:
        from ..errors import ConstraintError
        from .automaton import compile_regex

        vocab = load_vocab(Path(vocab_path))
        if vocab.hash != vocab_hash:
            print(f"vocabulary file {vocab_path} does not match the model (hash {vocab.hash})", file=sys.stderr)
            return EXIT_VOCAB
        try:
            compile_regex(regex, vocab)
        except ConstraintError as e:
            print(str(e), file=sys.stderr)
            return EXIT_CONSTRAINT
    except MemoryError:
        return EXIT_MEMORY
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    sys.exit(_child(sys.argv[1:]))
