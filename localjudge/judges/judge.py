"""`Judge`: a validated judge spec that renders chat messages and turns engine output into a result.

`Judge.evaluate(engine, **variables)` renders the prompt, calls the engine under the judge's output
format, parses, normalises, applies the judge's own rules and returns a `JudgeResult` with every
field filled. Failure is data: text that does not parse gives an unscored result
(`unscored_reason="parse_error"`), a prompt that does not fit gives `"prompt_too_long"`; neither is
ever turned into a "no". Bad input (a missing or empty required variable) raises `InputError`.

This module holds the judge's description, messages and calls; the variables' values and prompt text are
`values.py`'s, and turning outputs into results is `outcome.py`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from ..engine.base import Calls, DecodeOptions, Engine, Generation, Message, canonical_hash, drive
from ..errors import InputError, JudgeSpecError, ParseError, PromptTooLongError, UnscoredReason
from ..formats import OutputFormat, VerdictList
from ..store.results import JudgeResult
from .builders import Plan, build_format, compile_spec
from .context import CallContext
from .kinds import KINDS, KindTraits
from .outcome import JudgeOutcomes
from .programs import program_of
from .protocol import Prepared
from .render import TemplateError, format_value, neutralise, render
from .sections import KindSection
from .spec import JudgeSpec, Variable, spec_from_dict, version_dump
from .values import RowValues, VariableValues


@functools.cache
def _kept_versions() -> dict[str, str]:
    """Versions kept across attribution-only edits of built-in judges (builtin/_versions.toml says why):
    stores and caches written before those edits keep their cache keys."""

    import tomllib

    text = resources.files("localjudge.judges").joinpath("builtin").joinpath("_versions.toml").read_text("utf-8")
    return dict(tomllib.loads(text)["kept"])


class Judge(VariableValues, JudgeOutcomes):
    """One judge: `render(**vars)` → messages, `evaluate(engine, **vars)` → `JudgeResult`."""

    def __init__(self, spec: JudgeSpec, origin: str = "<builtin>"):
        self.spec = spec
        self.origin = origin
        try:  # the kind's keys, typed (sections.py); checked when the file loaded, again for a spec copied since
            self.section: KindSection = spec.section()
        except ValueError as e:
            raise JudgeSpecError(f"judge file {origin}: key '(top level)': {e}; fix the file and retry") from None
        try:
            self._plan: Plan = compile_spec(spec, self.section)
        except (InputError, TemplateError) as e:
            raise JudgeSpecError(f"judge file {origin}: {e}; fix the file and retry") from None
        dump = version_dump(spec)  # the fields added since the first format only when set
        self.version = _kept_versions().get(canonical_hash(dump)) or canonical_hash(dump)
        self._shots: list[Message] = []
        shots: list[Message] = []
        for i, ex in enumerate(spec.examples):
            try:
                raw, text = self._values(ex.variables)
            except InputError as e:
                raise JudgeSpecError(f"judge file {origin}: key 'examples.{i}.variables': {e}; fix the file and retry") from None
            turns = [m for m in self._messages(0, raw, text) if m.role != "system"]
            shots += [*turns, Message(role="assistant", content=ex.output)]
        self._shots = shots

    # ------------------------------------------------------------------------------ description

    @property
    def name(self) -> str:
        """The judge's name."""
        return self.spec.name

    @property
    def description(self) -> str:
        """What the judge checks, in one sentence."""
        return self.spec.description

    @property
    def kind(self) -> str:
        """How the judge calls the model: single, per_item, two_stage, four_line, v1_metric, instructions, custom_prompt."""
        return self.spec.kind

    @property
    def traits(self) -> KindTraits:
        """What the judge's kind is (`kinds.KINDS`): how a row is judged, what the kind adds."""
        return KINDS[self.spec.kind]

    @property
    def pass_threshold(self) -> float:
        """passed = score >= pass_threshold."""
        return self.spec.pass_threshold

    @property
    def format(self) -> OutputFormat | None:
        """The output format of each call; None for two_stage judges (see `formats`)."""
        return self._plan.formats[0] if program_of(self.traits.calls).one_format else None

    @property
    def formats(self) -> list[OutputFormat | None]:
        """Each call stage's format; None where it depends on an earlier output (two_stage's verdicts)."""
        return list(self._plan.formats)

    @property
    def output_formats(self) -> list[OutputFormat]:
        """The formats known before any output (the judge contract)."""
        return [f for f in self._plan.formats if f is not None]

    @property
    def variables(self) -> list[Variable]:
        """Every variable, with aliases, defaults and how its value becomes text."""
        return list(self._plan.variables)

    @property
    def required_variables(self) -> list[str]:
        """Names of the variables that must have a value."""
        return [v.name for v in self._plan.variables if v.required]

    @property
    def optional_variables(self) -> list[str]:
        """Names of the variables that may be left out."""
        return [v.name for v in self._plan.variables if not v.required]

    def __repr__(self) -> str:
        return f"Judge({self.name!r}, kind={self.kind!r}, version={self.version[:15]}…)"

    def prompt_templates(self) -> list[list[tuple[str, str]]]:
        """Each call stage's messages as (role, template): what `judges show` prints."""
        return [[(m.role, m.template + m.append) for m in stage] for stage in self._plan.stages]

    def info(self) -> dict[str, Any]:
        """A JSON-able description: name, kind, version, variables, formats, threshold, source."""
        src = self.spec.source
        return {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "version": self.version,
            "origin": self.origin,
            "pass_threshold": self.pass_threshold,
            "required_variables": self.required_variables,
            "optional_variables": self.optional_variables,
            "variables": [
                {
                    "name": v.name,
                    "required": v.required,
                    "aliases": v.aliases,
                    "description": v.description,
                    **({"choices": sorted(v.choices)} if v.choices else {}),
                    **({"default": v.default} if v.default is not None else {}),
                }
                for v in self._plan.variables
            ],
            "formats": [
                f.spec()
                if f is not None
                else {"kind": "verdict_list", "n": "one per statement", "unsure_value": self.spec.unsure_value}
                for f in self._plan.formats
            ],
            "source": src.model_dump() if src else None,
        }

    def configure(self, **updates: Any) -> Judge:
        """A copy with some spec keys changed (e.g. `unsure_value=0.3`, `pass_threshold=0.8`)."""
        data = {**self.spec.model_dump(mode="json", exclude_none=True), **updates}
        return Judge(spec_from_dict(data, f"{self.origin} (configured)"), f"{self.origin} (configured)")

    # --------------------------------------------------------------------------------- rendering

    def _messages(self, stage: int, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
        """The messages of call stage `stage` for these values and texts; a prepared row (`RowValues`) renders each
        once and hands the same list back after."""
        if not isinstance(raw, RowValues):
            return self._render_stage(stage, raw, text)
        key = (stage, tuple(text.items()))
        try:
            out = raw.rendered.get(key)
        except TypeError:  # a text that is not a string (a program's own field): rendered each time, as before
            return self._render_stage(stage, raw, text)
        if out is None:
            out = raw.rendered[key] = self._render_stage(stage, raw, text)
        return list(out)

    def _render_stage(self, stage: int, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
        out: list[Message] = []
        for m in self._plan.stages[stage]:
            if m.literal:
                content = m.template
            else:
                try:
                    content = render(m.template, self._plan.style, text, self.spec.expressions)
                except TemplateError as e:
                    raise InputError(f"judge '{self.name}': {e}") from None
            if m.strip:
                content = content.strip()
            out.append(Message(role=m.role, content=content + m.append))
        if stage == 0:
            for s in self.spec.suffixes:
                if isinstance(raw.get(s.when_list), list | tuple) and raw[s.when_list]:
                    out[-1] = Message(role=out[-1].role, content=out[-1].content + s.text)
            if getattr(self, "_shots", None):  # few-shot turns (align): after the system messages, before the prompt
                n_sys = next((i for i, m in enumerate(out) if m.role != "system"), len(out))
                out = [*out[:n_sys], *self._shots, *out[n_sys:]]
        return out

    def render(self, **variables: Any) -> list[Message]:
        """The messages of the first call (per_item: the first item; two_stage: the statements stage)."""
        return self.requests(**variables)[0]

    def requests(self, **variables: Any) -> list[list[Message]]:
        """The messages of every call known before any output (two_stage: only the first stage)."""
        return self.prepare(variables).requests

    def fingerprint(self, **variables: Any) -> str:
        """A hash of everything that shapes this judge's prompts for these variables: every call known
        up front and every variable's prompt text (two_stage's second prompt also depends on `input`,
        which its first prompt does not show; per_item has one prompt per item). For cache keys."""
        return self.prepare(variables).fingerprint

    def prepare(self, variables: Mapping[str, Any]) -> Prepared:
        """The row's values checked and its up-front prompts rendered, once: its fingerprint and first requests, and
        what `submit_many` reads back for its calls when given this row (bad input raises `InputError`)."""
        raw, text = self._values(variables)
        values = RowValues(raw, text)
        first = program_of(self.traits.calls).first(self, values, text)
        reqs = [[m.model_dump() for m in r] for r in first]
        fingerprint = canonical_hash({"judge_version": self.version, "requests": reqs, "values": text})
        return Prepared(variables, fingerprint, first, owner=self, state=values)

    def _row_values(self, row: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """A row's raw values and texts: those `prepare` kept when this judge prepared it, else computed now."""
        if isinstance(row, Prepared) and row.owner is self and isinstance(row.state, RowValues):
            return row.state, row.state.text
        return self._values(row)

    # -------------------------------------------------------------------------------- evaluation

    def evaluate(self, engine: Engine, options: DecodeOptions | None = None, **variables: Any) -> JudgeResult:
        """Judge one example with `engine`; see the module docstring for what failure looks like."""
        result = self.evaluate_many(engine, [variables], options)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def evaluate_many(
        self,
        engine: Engine,
        rows: Sequence[dict[str, Any]],
        options: DecodeOptions | None = None,
        on_result: Callable[[int, JudgeResult | Exception], None] | None = None,
    ) -> list[JudgeResult | Exception]:
        """Judge several examples side by side (an engine with `n_parallel > 1` batches their decoding).
        Each row's result, or the exception it raised (bad input), in order; `on_result(i, result)` as
        each one finishes."""
        out: list[Any] = [None] * len(rows)

        def done(i: int, r: JudgeResult | Exception) -> None:
            out[i] = r
            if on_result is not None:
                on_result(i, r)

        self.submit_many(engine, rows, options, done, engine.model_id)
        engine.drain()
        return out

    def submit_many(
        self,
        engine: Engine,
        rows: Sequence[Mapping[str, Any]],
        options: DecodeOptions | None,
        on_result: Callable[[int, JudgeResult | Exception], None],
        model_id: str = "",
    ) -> None:
        """Queue every row's calls on `engine`; `on_result(i, result or exception)` runs inside its drain."""
        if self.spec.alignment is not None:  # aligned on the expected score: it needs the verdict's probabilities
            options = (options or DecodeOptions()).model_copy(update={"probs": True})
        if self.spec.think_tokens and not (options and options.think_tokens):  # a reasoning judge (the call's own wins)
            options = (options or DecodeOptions()).model_copy(update={"think_tokens": self.spec.think_tokens})
        for i, variables in enumerate(rows):
            try:
                raw, text = self._row_values(variables)
            except Exception as e:
                on_result(i, e)
                continue
            drive(engine, self._calls(raw, text, options, model_id), options, functools.partial(on_result, i))

    def _calls(self, raw: dict[str, Any], text: dict[str, str], options: DecodeOptions | None, model_id: str) -> Calls:
        """The judge's calls as a generator (its call shape's program, `programs.PROGRAMS`, given the row's
        `CallContext`): yields requests, receives their generations, returns the result."""
        ctx = CallContext(self, self.section, raw, text, model_id, options)
        try:
            return (yield from program_of(self.traits.calls).calls(ctx))
        except PromptTooLongError as e:
            return self._unscored(ctx.gens, model_id, UnscoredReason.PROMPT_TOO_LONG, str(e))

    def judge_without_model(self, model_id: str = "", /, **variables: Any) -> JudgeResult:
        """Judge one row of a model-free judge (`traits.needs_model` False) with no engine; bad input raises.
        `model_id` is recorded on the result as for any judge of the run (the run's model, not called)."""
        raw, text = self._values(variables)
        calls = program_of(self.traits.calls).calls(CallContext(self, self.section, raw, text, model_id))
        try:
            next(calls)
        except StopIteration as done:  # its program asked for no call: the result
            result: JudgeResult = done.value
            return result
        calls.close()
        raise InputError(f"judge '{self.name}' calls the model; judge its rows with an engine")

    def score_text(self, text: str, **variables: Any) -> JudgeResult:
        """Parse an output produced elsewhere (another backend, a file) exactly as `evaluate` would."""
        if not self.traits.needs_model:
            raise InputError(
                f"judge '{self.name}' computes its score without a model; score_text takes one output of a single-call judge"
            )
        if not self.traits.single_call:
            raise InputError(f"judge '{self.name}' makes several calls; score_text takes one output of a single-call judge")
        raw, _ = self._values(variables)
        fmt = self._plan.formats[0]
        assert fmt is not None
        return self._single([Generation(text=text)], fmt, raw)

    def _two_stage(self, ctx: CallContext[KindSection]) -> Calls:
        raw, text, gens, model_id = ctx.raw, ctx.text, ctx.gens, ctx.model_id
        f1 = self._plan.formats[0]
        assert f1 is not None
        gens += yield [(self._messages(0, raw, text), f1)]
        try:
            statements: list[str] = f1.value(f1.parse(gens[0].text))
        except ParseError as e:
            return self._unscored(gens, model_id, UnscoredReason.PARSE_ERROR, f"statements: {e}")
        f2 = self.stage_two_format(len(statements))
        t2 = dict(text)
        t2.update(self.stage_two_values(statements))
        gens += yield [(self._messages(1, raw, t2), f2)]
        try:
            verdict = f2.parse(gens[1].text)
        except ParseError as e:
            return self._unscored(gens, model_id, UnscoredReason.PARSE_ERROR, f"verdicts: {e}", {"statements": statements})
        details = {
            "statements": statements,
            "unsure_value": self.spec.unsure_value,
            "verdicts": [x.model_dump() for x in verdict.verdicts],
        }
        return self._scored(
            self._base(gens, f2),
            f2.value(verdict),
            f2.normalise(verdict),
            f2.rationale(verdict),
            {"statements": statements, **verdict.model_dump()},
            details,
        )

    def stage_two_format(self, n_statements: int) -> VerdictList:
        """Exactly one verdict per statement; one when there are none (Mastra's prompt says "1")."""
        out = dict(self.spec.stages[1].output or {})
        out.pop("kind", None)
        fmt = build_format({"kind": "verdict_list", "n": max(1, n_statements), "unsure_value": self.spec.unsure_value, **out})
        assert isinstance(fmt, VerdictList)
        return fmt

    def stage_two_values(self, statements: list[str]) -> dict[str, str]:
        """Derived variables of the verdict stage: the statements (a JS array in a template literal)."""
        safe = neutralise(list(statements), self._plan.tags)
        vals = {"statements": format_value(safe, "js_array")}
        for name in self.spec.expressions.values():
            if name != "statements":
                vals[name] = str(len(statements)) if statements else "1"
        return vals

    def render_stage_two(self, statements: list[str], **variables: Any) -> list[Message]:
        """The verdict-stage messages for given statements (two_stage judges)."""
        raw, text = self._values(variables)
        text.update(self.stage_two_values(statements))
        return self._messages(1, raw, text)
