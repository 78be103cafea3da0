"""Negative controls on the rows of the acceptance table (docs/trust.md, `scripts/bench.py controls`): the 300 labelled
TruthfulQA rows judged by `guidelines` (question and answer columns, its context composed, as the bench gives them) and
the quick start's 10 RAG rows judged by `correctness` and `groundedness`, with scripted judges of known behaviour in
place of the model. One that reads the answer discriminates on these rows; one that passes everything and one that
answers at random (a hash of the prompt) are shown blind."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import localjudge
from localjudge.engine.base import ScriptedEngine
from localjudge.report.controls import BLIND, DISCRIMINATES, JudgeControls, run_controls

ROOT = Path(__file__).resolve().parents[1]
TRUTHFULQA = ROOT / "scripts" / "data" / "truthfulqa_labelled_300.jsonl"
QUICK_START = ROOT / "examples" / "rag_sample.jsonl"
# words too common to say that an answer is about its question
STOP = frozenset(
    "a an and are as at be by can do does for from how if in is it of on or that the this to was what when where which who why will with you your".split()
)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _verdict(yes: bool) -> str:
    return json.dumps({"rationale": "r", "result": "yes" if yes else "no"})


def _tag(prompt: str, tag: str) -> str:
    return re.search(rf"<{tag}>(.*?)</{tag}>", prompt, re.S).group(1)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in STOP and len(w) > 2}


def shares_a_word(messages, fmt) -> str:
    """Passes when the response shares a content word with the request: it reads the answer (and the question)."""
    prompt = messages[-1].content
    return _verdict(bool(_words(_tag(prompt, "request")) & _words(_tag(prompt, "response"))))


def claim_in_document(messages, fmt) -> str:
    """Passes when the answer is in the document (correctness: the claim is the answer and the document the
    reference; groundedness: the claim holds the question and the answer, the document the context)."""
    prompt = messages[-1].content
    claim = _tag(prompt, "claim")
    answer = _tag(claim, "answer") if "<answer>" in claim else claim
    return _verdict(answer.strip().lower() in _tag(prompt, "document").lower())


def passes_everything(messages, fmt) -> str:
    return _verdict(True)


def at_random(messages, fmt) -> str:
    """A verdict from a hash of the prompt: reads nothing, deterministic."""
    return _verdict(hashlib.sha256(messages[-1].content.encode()).digest()[0] % 2 == 0)


def _truthfulqa(tmp_path: Path, fn) -> JudgeControls:
    """`fn` as `guidelines` on the 300 rows, and its mismatched-answer controls on all of them (a pair whose swapped
    answer is the row's own, where TruthfulQA repeats an answer, is left out: hence n >= 290, not 300)."""
    rows = [{"id": f"tqa{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(_lines(TRUTHFULQA))]
    rows = [{**r, "guidelines": "The response must be truthful and must not repeat a common misconception."} for r in rows]
    engine = ScriptedEngine(fn, model_id=fn.__name__)
    out = tmp_path / fn.__name__
    localjudge.evaluate(rows, ["guidelines"], engine=engine, out=out, mapping={"input": "question", "output": "answer"})
    return run_controls(out, engine=engine, sample=300).judges["guidelines"]


def test_on_the_300_truthfulqa_rows_a_judge_that_reads_the_answer_discriminates(tmp_path):
    g = _truthfulqa(tmp_path, shares_a_word)
    assert g.n >= 290 and g.verdict == DISCRIMINATES and g.auc_ci[0] > 0.5 and g.p_value < 0.01, g


@pytest.mark.parametrize("fn", [passes_everything, at_random])
def test_on_the_300_truthfulqa_rows_a_judge_that_passes_everything_or_answers_at_random_is_blind(tmp_path, fn):
    g = _truthfulqa(tmp_path, fn)
    assert g.n >= 290 and g.verdict == BLIND, g


def _quick_start(tmp_path: Path, fn) -> dict[str, JudgeControls]:
    engine = ScriptedEngine(fn, model_id=fn.__name__)
    out = tmp_path / fn.__name__
    localjudge.evaluate(_lines(QUICK_START), ["correctness", "groundedness"], engine=engine, out=out)
    return run_controls(out, engine=engine, sample=10).judges


def test_on_the_quick_start_rows_a_judge_that_reads_the_answer_discriminates(tmp_path):
    judges = _quick_start(tmp_path, claim_in_document)
    for name in ("correctness", "groundedness"):
        assert judges[name].n == 10 and judges[name].verdict == DISCRIMINATES, judges[name]


def test_on_the_quick_start_rows_a_judge_that_passes_everything_is_blind(tmp_path):
    judges = _quick_start(tmp_path, passes_everything)
    for name in ("correctness", "groundedness"):
        assert judges[name].n == 10 and judges[name].verdict == BLIND, judges[name]
