"""Options shared by commands, defined once: the model and its backend options, decoding, traces.

Each decorator adds its click options and hands the command one typed object instead of many
parameters: `@model_options()` → `model: ModelChoice`, `@decode_options()` → `decode: DecodeOptions`,
`@trace_options` → `trace: TraceChoice`. Values are validated by the library (a bad `--option` is an
`InputError`, exit 2, naming the valid keys); nothing here loads a model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from .. import jsonio
from ..datasets import unencodable
from ..engine.base import DecodeOptions
from ..errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

# flag → backend option key: the common llama.cpp settings keep their own flags
ALIASES = {
    "n_ctx": "n_ctx",
    "threads": "n_threads",
    "gpu_layers": "n_gpu_layers",
    "n_batch": "n_batch",
    "chat_template": "chat_template",
    "parallel": "n_parallel",
}


def parse_assignments(pairs: tuple[str, ...], what: str) -> dict[str, Any]:
    """`name=value` pairs; a value that starts with [ or { is read as JSON (lists stay lists), @file reads a file."""
    out: dict[str, Any] = {}
    for p in pairs:
        if "=" not in p:
            raise InputError(f"{what} {p!r} must look like name=value")
        k, v = p.split("=", 1)
        val: Any = v
        if v[:1] in "[{":
            try:
                val = jsonio.loads(v)
            except json.JSONDecodeError as e:
                raise InputError(f"{what} {k!r} starts like JSON but is not valid JSON ({e.msg}); quote it as text") from None
        elif v.startswith("@"):
            try:
                with open(v[1:], encoding="utf-8") as f:
                    val = f.read()
            except OSError as e:
                raise InputError(f"{what} {k!r}: cannot read file {v[1:]!r} ({e.strerror})") from None
            except UnicodeDecodeError as e:
                raise InputError(f"{what} {k!r}: file {v[1:]!r} is not valid UTF-8 at byte {e.start}; save it as UTF-8") from None
        bad = unencodable(val)
        if bad:  # a byte that is not UTF-8 in argv arrives as U+DC80..U+DCFF
            raise InputError(f"{what} {ascii(k.strip())}: {bad} (a byte that is not UTF-8?); pass UTF-8 text")
        out[k.strip()] = val
    return out


def option_pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    """`key=value` pairs of --option, values kept as text (the backend's Options coerce them)."""
    out: dict[str, str] = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option {p!r} must look like key=value (see `localjudge models options`)")
        out[key.strip()] = value
    return out


@dataclass
class ModelChoice:
    """--model and its options as given on the command line (validated when resolved)."""

    spec: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)  # option key -> the flag that set it, for messages

    def ref(self) -> Any:
        """The `ModelRef` (backend found, options validated; nothing loaded). Bad options: `InputError`."""
        return self.model_spec().ref()

    def model_spec(self) -> Any:
        """The run's `ModelSpec`, validated now (its `ModelRef` is built here, once). Bad options: `InputError`."""
        from ..engine.model_spec import ModelSpec

        try:
            return ModelSpec.of(self.spec, self.options)
        except InputError as e:
            msg = str(e)
            for key, flag in self.flags.items():
                msg = msg.replace(f"--option {key}:", f"{flag} ({key}):").replace(f"--option {key}=", f"{flag}=")
            raise InputError(msg) from None


def model_options(*, parallel: bool = False) -> Callable[[F], F]:
    """--model, --option KEY=VALUE and the aliases --n-ctx, --threads, --gpu-layers, --n-batch,
    --chat-template (and --parallel for `run`); the command receives `model: ModelChoice`."""
    opts = [
        click.option(
            "--model",
            "-m",
            "model_spec",
            default=None,
            metavar="SPEC",
            help="llama:NAME_OR_PATH (the default scheme: a registry name or a .gguf path), scripted:FILE, "
            "server:URL#MODEL; empty for the default model.",
        ),
        click.option(
            "--option",
            "model_option",
            multiple=True,
            metavar="KEY=VALUE",
            help="A backend option (repeatable), e.g. n_ctx=2048; `localjudge models options` lists them.",
        ),
        click.option(
            "--n-ctx", type=int, default=None, help="Alias of --option n_ctx: context window (default: min(4096, model's))."
        ),
        click.option(
            "--threads",
            type=int,
            default=None,
            help="Alias of --option n_threads (default: every physical core this process may use, at most 16).",
        ),
        click.option("--gpu-layers", type=int, default=None, help="Alias of --option n_gpu_layers: layers on the GPU (-1: all)."),
        click.option(
            "--n-batch", type=int, default=None, help="Alias of --option n_batch: tokens per llama.cpp batch (default 512)."
        ),
        click.option("--chat-template", default=None, help="Alias of --option chat_template: 'gguf', 'raw' or a Jinja template."),
    ]
    if parallel:
        opts.append(
            click.option(
                "--parallel",
                type=click.IntRange(1, 64),
                default=None,
                help="Alias of --option n_parallel: rows decoded side by side in one llama.cpp batch (default 1: every output "
                "byte-identical to judging the row alone; N > 1 is faster, most on a GPU, and a rationale can differ "
                "where the model is at a near-tie, see docs/batch-runs.md).",
            )
        )

    def deco(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kw: Any) -> Any:
            return f(*args, **model_choice(kw))

        for o in reversed(opts):
            wrapper = o(wrapper)
        return wrapper  # type: ignore[return-value]

    return deco


def model_choice(kw: dict[str, Any]) -> dict[str, Any]:
    """A command's parsed parameters (click's `Context.params`) with the `model_options` flags taken out and put
    together as `model: ModelChoice`, as the command receives them (`kw` is changed in place and returned)."""
    spec = kw.pop("model_spec")
    given = option_pairs(kw.pop("model_option"))
    flags: dict[str, str] = {}
    for name, key in ALIASES.items():
        if name not in kw:
            continue
        value = kw.pop(name)
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if key in given and str(given[key]) != str(value):
            raise InputError(f"{flag} {value} and --option {key}={given[key]} disagree; give one of them")
        given[key], flags[key] = value, flag
    kw["model"] = ModelChoice(spec, given, flags)
    return kw


def decode_options(*, verdict: bool = True, field_tokens_default: int | None = None) -> Callable[[F], F]:
    """--temperature, --seed, --field-tokens (and --fast, --probs where the command honours them);
    the command receives `decode: DecodeOptions`."""
    opts = [
        click.option("--temperature", type=float, default=0.0, show_default=True, help="0: greedy decoding."),
        click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (with --temperature > 0)."),
        click.option(
            "--field-tokens",
            type=click.IntRange(1),
            default=field_tokens_default,
            show_default=field_tokens_default is not None,
            help="Token budget per free-text field (default: each format's).",
        ),
    ]
    if verdict:
        opts += [
            click.option("--fast", is_flag=True, help="Verdict only: skip rationales (yes/no, score and choice formats)."),
            click.option(
                "--probs", is_flag=True, help="Also report the expected score under the model's distribution at the verdict."
            ),
            click.option(
                "--think-tokens",
                type=click.IntRange(0),
                default=0,
                help="Reasoning: think in free text inside <think>...</think> for at most N tokens, then the verdict.",
            ),
        ]

    def deco(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kw: Any) -> Any:
            extra = {k: kw.pop(k) for k in ("fast", "probs", "think_tokens") if k in kw}
            kw["decode"] = DecodeOptions(
                temperature=kw.pop("temperature"), seed=kw.pop("seed"), field_tokens=kw.pop("field_tokens"), **extra
            )
            return f(*args, **kw)

        for o in reversed(opts):
            wrapper = o(wrapper)
        return wrapper  # type: ignore[return-value]

    return deco


@dataclass
class TraceChoice:
    """The trace judge's settings from the command line."""

    path: str | None
    instructions: str | None
    result_type: str
    max_iterations: int
    max_tool_calls: int | None


def trace_options(*, required: bool) -> Callable[[F], F]:
    """--trace, --instructions, --result, --max-iterations, --max-tool-calls; the command receives `trace: TraceChoice`."""
    opts = [
        click.option(
            "--trace",
            "trace_path",
            required=required,
            default=None,
            help="An agent trace: MLflow trace export or OpenTelemetry span JSON file.",
        ),
        click.option("--instructions", required=required, default=None, help="What to check; may refer to {{ trace }}."),
        click.option(
            "--result",
            "result_type",
            default="yes/no",
            show_default=True,
            help="Rating type: yes/no, bool, int:1-5, float:0-1[:decimals], labels:a,b,c (labels:good=1,bad=0).",
        ),
        click.option(
            "--max-iterations", default=10, show_default=True, type=click.IntRange(1), help="Actions before giving up (unscored)."
        ),
        click.option(
            "--max-tool-calls",
            default=None,
            type=click.IntRange(0),
            help="After this many tool calls only the rating may follow (default: the model decides).",
        ),
    ]

    def deco(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kw: Any) -> Any:
            kw["trace"] = TraceChoice(
                kw.pop("trace_path"),
                kw.pop("instructions"),
                kw.pop("result_type"),
                kw.pop("max_iterations"),
                kw.pop("max_tool_calls"),
            )
            return f(*args, **kw)

        for o in reversed(opts):
            wrapper = o(wrapper)
        return wrapper  # type: ignore[return-value]

    return deco


@dataclass
class TrustChoice:
    """--panel / --panel-aggregate / --panel-weights / --escalate-to / --escalate-below as given."""

    panel: list[str] | None = None
    aggregation: str = "majority"
    weights: list[float] | None = None
    escalate_to: str | None = None
    escalate_below: float | None = None

    def spec(self) -> Any:
        """The run's `TrustSpec` (checked as `kwargs` checks)."""
        from ..run.spec import TrustSpec

        return TrustSpec(**self.kwargs())

    def kwargs(self) -> dict[str, Any]:
        """The keywords for `RunSpec.build` (empty when none was given, so plain runs stay as they were)."""
        kw: dict[str, Any] = {}
        if self.panel is not None:
            kw.update(panel=self.panel, aggregation=self.aggregation, weights=self.weights)
        elif self.aggregation != "majority" or self.weights is not None:
            raise InputError("--panel-aggregate and --panel-weights go with --panel")
        if self.escalate_to is not None or self.escalate_below is not None:
            if self.escalate_to is None or self.escalate_below is None:
                raise InputError("--escalate-to MODEL and --escalate-below C go together")
            kw.update(escalate_to=self.escalate_to, escalate_below=self.escalate_below)
        return kw


# the kinds of negative control (report/controls.py KINDS, tests/test_controls.py checks they agree) and `all`
CONTROL_KIND_CHOICES = ("answer", "non_answer", "context", "reference", "same_answer", "last_turn", "all")


def control_kind_option(flag: str, dest: str, per: str) -> Callable[[F], F]:
    """The repeatable option naming the kinds of negative control to judge besides another row's answer; `per`: what
    each kind costs, in the command's words."""
    return click.option(
        flag,
        dest,
        type=click.Choice(CONTROL_KIND_CHOICES),
        multiple=True,
        help="A kind of control besides another row's answer (always judged): non_answer (a fixed non-answer), context "
        "or reference (another row's, for judges that declare one), same_answer (a pairwise judge given one answer on "
        "both sides), last_turn (a conversation judge given another conversation's last assistant answer), or all; "
        f"repeatable. Each costs {per}.",
    )


def trust_options() -> Callable[[F], F]:
    """Panels and cascades (see localjudge/trust/); the command receives `trust: TrustChoice`."""
    opts = [
        click.option(
            "--panel",
            default=None,
            metavar="MODEL_A,MODEL_B,...",
            help="Judge with a panel: each model judges every row (one after the other), the panel votes; "
            "results per member are stored as JUDGE@MODEL.",
        ),
        click.option(
            "--panel-aggregate",
            type=click.Choice(["majority", "mean", "median"]),
            default="majority",
            show_default=True,
            help="With --panel: majority vote for verdicts (ties are reported, never broken); mean or median for scores.",
        ),
        click.option("--panel-weights", default=None, metavar="W1,W2,...", help="With --panel: one weight per member."),
        click.option(
            "--escalate-to",
            default=None,
            metavar="MODEL",
            help="Cascade: rows the --model judges with confidence below --escalate-below are judged again by MODEL "
            "(needs --probs, or --both-orders for pairwise judges); with --panel, the panel is the first stage and its "
            "confidence the share of members voting for its verdict (with --probs: their mean probability of it).",
        ),
        click.option(
            "--escalate-below",
            type=click.FloatRange(0, 1),
            default=None,
            metavar="C",
            help="With --escalate-to: the confidence threshold (`localjudge align --target-agreement` chooses one).",
        ),
    ]

    def deco(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kw: Any) -> Any:
            panel = kw.pop("panel")
            weights = kw.pop("panel_weights")
            members = None if panel is None else [m.strip() for m in panel.split(",") if m.strip()]
            try:
                w = None if weights is None else [float(x) for x in weights.split(",")]
            except ValueError:
                raise InputError(f"--panel-weights {weights!r}: give numbers separated by commas, one per member") from None
            kw["trust"] = TrustChoice(members, kw.pop("panel_aggregate"), w, kw.pop("escalate_to"), kw.pop("escalate_below"))
            return f(*args, **kw)

        for o in reversed(opts):
            wrapper = o(wrapper)
        return wrapper  # type: ignore[return-value]

    return deco


def http_limit_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--header-timeout`, `--body-timeout` and `--max-connections`: the bounds `serve` and `view` share
    (localjudge/http/), with the same defaults."""
    f = click.option(
        "--max-connections",
        default=512,
        show_default=True,
        type=click.IntRange(1),
        help="Open connections; more are answered 503 at once.",
    )(f)
    f = click.option(
        "--body-timeout", default=30.0, show_default=True, type=click.FloatRange(0.1), help="Seconds to send a request body."
    )(f)
    return click.option(
        "--header-timeout", default=10.0, show_default=True, type=click.FloatRange(0.1), help="Seconds to send request headers."
    )(f)
