"""One exception tree for localjudge.

    LocalJudgeError                 base; `exit_code` is what the CLI returns
    ├── ModelError                  exit 3: the model cannot be used
    │   ├── ModelNotFoundError      no file / unknown registry name / package missing
    │   ├── NotGGUFError            wrong magic bytes, truncated or unreadable file
    │   ├── ChecksumMismatchError   sha256 differs from localjudge/models/models.toml
    │   ├── ChatTemplateError       no usable chat template in the GGUF metadata
    │   └── GPUUnavailableError     GPU layers asked of a CPU-only llama.cpp build
    ├── ConstraintError             exit 3: a format the model's vocabulary cannot express
    ├── PromptTooLongError          exit 4: prompt + output budget exceed n_ctx
    ├── StorageError                exit 5: the run directory / store cannot be written (disk full, read-only)
    ├── InputError                  exit 2: bad user input (empty field, bad value, bad file)
    │   ├── MissingVariableError    a judge variable has no value
    │   ├── UnknownJudgeError       name not in the registry (with suggestions)
    │   └── JudgeSpecError          a judge data file is malformed
    └── ParseError                  exit 2: text that is not a valid verdict for a format

Every message is one line that names the problem and the fix. A row's problem is not raised: the judgement is
stored unscored, its `unscored_reason` one of `UnscoredReason`.
"""

from __future__ import annotations

from enum import StrEnum


class LocalJudgeError(Exception):
    """Base class; `exit_code` is the CLI exit status for this kind of error."""

    exit_code = 1


class ModelError(LocalJudgeError):
    """The model cannot be used (exit 3); also raised when too many judgements of a run fail in a row."""

    exit_code = 3


class ModelNotFoundError(ModelError):
    """No model file at the path, an unknown registry name, a model package not installed, or an unreadable
    registry or answers file (exit 3)."""


class NotGGUFError(ModelError):
    """Not a loadable GGUF: a directory, wrong magic bytes, truncated, an unsupported header, or llama.cpp cannot
    load the model or create its context (exit 3)."""


class ChecksumMismatchError(ModelError):
    """A registered model file's sha256 differs from the one in the model registry (exit 3)."""


class ChatTemplateError(ModelError):
    """The GGUF has no chat template, or it does not compile or refuses the messages (exit 3)."""


class GPUUnavailableError(ModelError):
    """GPU layers were asked of a CPU-only llama-cpp-python build (exit 3)."""


class ConstraintError(LocalJudgeError):
    """The model's vocabulary cannot express or complete a format's regex (exit 3)."""

    exit_code = 3


class PromptTooLongError(LocalJudgeError):
    """Prompt plus output budget exceed the context window (exit 4); `n_prompt`, `n_ctx` and `budget` are
    token counts. A run records it as an unscored `prompt_too_long` result instead."""

    exit_code = 4

    def __init__(self, message: str, n_prompt: int = 0, n_ctx: int = 0, budget: int = 0):
        super().__init__(message)
        self.n_prompt = n_prompt
        self.n_ctx = n_ctx
        self.budget = budget


class StorageError(LocalJudgeError):
    """The run directory or its store cannot be written: disk full, read-only, no permission."""

    exit_code = 5


class InputError(LocalJudgeError):
    """Bad user input: an empty or wrong-typed value, a bad option, an unreadable or malformed file (exit 2)."""

    exit_code = 2


class MissingVariableError(InputError):
    """A judge variable that is needed (required, or to swap a pairwise pair) has no value (exit 2)."""


class UnknownJudgeError(InputError):
    """A judge name that is not in the registry; the message suggests near names (exit 2)."""


class JudgeSpecError(InputError):
    """A judge data file or judges directory is unreadable, malformed or conflicting; names the file and key (exit 2)."""


class ParseError(LocalJudgeError):
    """Text that does not parse into the typed verdict of a format."""

    exit_code = 2

    def __init__(self, format_name: str, reason: str, text: str = ""):
        snippet = text if len(text) <= 120 else text[:117] + "..."
        super().__init__(f"cannot parse {format_name} verdict: {reason} (text: {snippet!r})")
        self.format_name = format_name
        self.reason = reason
        self.text = text


class UnscoredReason(StrEnum):
    """Why a judgement has no score: every value localjudge itself stores in `JudgeResult.unscored_reason` (the
    store, results.jsonl, results.csv, `summary.json`'s `unscored_reasons`). The field stays a string: stored
    values are these strings, read back unchanged from any older store, and a plugin judge may name its own."""

    PARSE_ERROR = "parse_error"  # the model's text does not parse under the judge's format
    PROMPT_TOO_LONG = "prompt_too_long"  # the prompt does not fit the context window (never cut)
    INPUT_ERROR = "input_error"  # the row's values cannot be judged (the run names row and column)
    MISSING_VALUE = "missing_value"  # a mapped column is missing in this row
    EMPTY_VALUE = "empty_value"  # a mapped column is empty in this row
    ERROR = "error"  # the judge raised on this row (the run names the exception)
    FOREIGN_ROW = "foreign_row"  # a stored row another dataset wrote (store/db.py)
    PANEL_TIE = "panel_tie"  # a panel's members split evenly
    PANEL_UNSCORED = "panel_unscored"  # no member of a panel scored
    NOT_PAIRWISE = "not_pairwise"  # one order of a both-orders pairwise judgement gave no pairwise verdict
    MAX_ITERATIONS = "max_iterations"  # a trace judge used every tool call it was allowed
    TOOL_TIME_LIMIT = "tool_time_limit"  # a trace judge's tool ran past its time limit
    INVALID_TRACE = "invalid_trace"  # a trace that cannot be read
    NO_PROBABILITIES = "no_probabilities"  # an aligned judge on a backend that gives no token probabilities
