"""Agreement statistics against hand-computed cases, the label join, both-orders pairwise judging."""

from __future__ import annotations

import json
import math

import pytest

from localjudge.cli.report import render_table
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders, combine_orders, pairwise_stats, swap_inputs, winner_of
from localjudge.labels.agreement import agree, read_labels
from localjudge.statistics import (
    accuracy,
    balanced_accuracy,
    cohen_kappa,
    confusion_matrix,
    kendall,
    pairwise_accuracy,
    spearman,
)
from localjudge.statistics import wilson_interval as wilson
from localjudge.store.results import Record, ResultRow


def record(fmt_spec):
    """A reproducibility record for rows built in a test (only the format matters here)."""
    return Record(
        model_id="m",
        model_sha256="0" * 64,
        judge_version="v",
        format=fmt_spec,
        prompt_hash="p",
        decode_options={},
        localjudge_version="test",
    )


# ------------------------------------------------------------------------------------ statistics

Y = ["yes", "yes", "no", "no", "yes"]
P = ["yes", "no", "no", "yes", "yes"]


def test_accuracy_is_share_of_equal_pairs():
    assert accuracy(Y, P) == pytest.approx(3 / 5)


def test_balanced_accuracy_is_mean_recall_per_true_class():
    # recall(yes) = 2/3 (rows 0 and 4 of 0, 1, 4), recall(no) = 1/2 (row 2 of 2, 3)
    assert balanced_accuracy(Y, P) == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_cohen_kappa_matches_hand_computation_for_two_classes():
    # po = 0.6; labels 3 yes / 2 no, judge 3 yes / 2 no -> pe = (9 + 4) / 25 = 0.52
    assert cohen_kappa(Y, P) == pytest.approx((0.6 - 0.52) / (1 - 0.52))


def test_cohen_kappa_matches_hand_computation_for_three_classes():
    y = ["a", "a", "a", "b", "b", "c"]
    p = ["a", "a", "b", "b", "c", "c"]
    # po = 4/6; pe = (3*2 + 2*2 + 1*2) / 36 = 1/3 -> kappa = (2/3 - 1/3) / (2/3) = 0.5
    assert cohen_kappa(y, p) == pytest.approx(0.5)


def test_cohen_kappa_is_minus_one_for_systematic_disagreement_and_one_for_perfect_agreement():
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)
    assert cohen_kappa(["yes", "no", "no"], ["yes", "no", "no"]) == pytest.approx(1.0)


def test_cohen_kappa_is_undefined_when_both_raters_are_constant():
    assert cohen_kappa(["yes"] * 4, ["yes"] * 4) is None


def test_confusion_matrix_rows_are_labels_and_columns_are_predictions():
    assert confusion_matrix(Y, P, ["yes", "no"]) == [[2, 1], [1, 1]]


def test_confusion_matrix_rejects_values_outside_the_labels():
    with pytest.raises(ValueError, match="maybe"):
        confusion_matrix(["yes"], ["maybe"], ["yes", "no"])


def test_statistics_reject_sequences_of_different_length():
    with pytest.raises(ValueError, match="differ in length"):
        accuracy(["yes"], ["yes", "no"])


def test_spearman_uses_average_ranks_for_ties():
    # ranks x = 1..5; y = [5, 6, 7, 8, 7] -> [1, 2, 3.5, 5, 3.5]; rho = 8 / sqrt(10 * 9.5)
    c = spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    assert c.statistic == pytest.approx(8 / math.sqrt(95))
    assert c.n == 5 and 0 < c.p_value < 1


def test_kendall_is_tau_b_with_tie_correction():
    # 8 concordant, 1 discordant, 1 pair tied in y: tau_b = 7 / sqrt(10 * 9)
    c = kendall([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    assert c.statistic == pytest.approx(7 / math.sqrt(90))


def test_correlation_of_a_constant_input_is_undefined_not_nan():
    c = spearman([1, 1, 1], [1, 2, 3])
    assert c.statistic is None and c.p_value is None and c.n == 3


def test_pairwise_accuracy_counts_a_tie_as_a_miss():
    pa = pairwise_accuracy([1, 2, 1, 2], [1, 1, "tie", 2])
    assert (pa.n_correct, pa.accuracy, pa.n_ties, pa.tie_rate) == (2, 0.5, 1, 0.25)
    assert pa.accuracy_decided == pytest.approx(2 / 3)


def test_wilson_interval_matches_the_published_value_for_8_of_10():
    lo, hi = wilson(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    assert wilson(0, 0) is None


# ----------------------------------------------------------------------------- results to compare


def yes_no_rows(values, judge="relevance_to_query"):
    """ResultRows holding real results of a yes/no catalog judge ('?' = text that does not parse)."""
    j = get_judge(judge)
    rows = []
    for i, v in enumerate(values):
        text = "not json" if v == "?" else json.dumps({"rationale": f"because {i}", "result": v})
        inputs = {"input": f"question {i}", "output": f"answer {i}"}
        rows.append(
            ResultRow(
                row_index=i,
                row_id=f"r{i}",
                judge=judge,
                inputs=inputs,
                result=j.score_text(text, **inputs),
                record=record(j.format.spec()),
            )
        )
    return rows


def score_rows(scores):
    j = get_judge("coherence")
    rows = []
    for i, s in enumerate(scores):
        inputs = {"question": f"q{i}", "answer": f"a{i}", "context": "c"}
        text = json.dumps({"eval_score": s, "explanation": f"e{i}"})
        rows.append(
            ResultRow(
                row_index=i,
                row_id=str(i),
                judge="coherence",
                inputs=inputs,
                result=j.score_text(text, **inputs),
                record=record(j.format.spec()),
            )
        )
    return rows


def test_agree_on_a_yes_no_judge_reports_accuracy_kappa_matrix_and_disagreements():
    rows = yes_no_rows(P)
    labels = [{"id": f"r{i}", "human": y} for i, y in enumerate(Y)]
    rep = agree(rows, labels, "human")
    assert rep.kind == "categorical" and rep.n_used == 5
    assert rep.accuracy == pytest.approx(0.6)
    assert rep.cohen_kappa == pytest.approx(1 / 6)
    assert rep.labels == ["yes", "no"] and rep.confusion == [[2, 1], [1, 1]]
    assert [d.row_id for d in rep.disagreements] == ["r1", "r3"]
    assert rep.disagreements[0].rationale == "because 1"
    assert "Cohen's kappa" in render_table(rep)


def test_agree_skips_unscored_results_and_empty_labels_and_counts_them():
    rows = yes_no_rows(["yes", "?", "no", "yes"])
    labels = [{"id": "r0", "h": "yes"}, {"id": "r1", "h": "no"}, {"id": "r2", "h": ""}, {"id": "r3", "h": "YES"}]
    rep = agree(rows, labels, "h")
    assert (rep.n_used, rep.n_unscored, rep.n_unlabelled) == (2, 1, 1)
    assert rep.accuracy == 1.0


def test_agree_accepts_boolean_labels_for_a_yes_no_judge():
    rep = agree(yes_no_rows(["yes", "no"]), [{"id": "r0", "h": True}, {"id": "r1", "h": False}], "h")
    assert rep.accuracy == 1.0


def test_labels_join_by_position_when_there_is_no_id_column():
    rep = agree(yes_no_rows(P), [{"human": y} for y in Y], "human")
    assert rep.join.how.startswith("by position") and rep.n_used == 5


def test_labels_join_on_an_input_variable_or_an_explicit_field():
    rows = yes_no_rows(P)
    labels = [{"question": f"question {i}", "human": y} for i, y in enumerate(Y)][::-1]
    assert agree(rows, labels, "human", key="question=input").accuracy == pytest.approx(0.6)
    labels2 = [{"output": f"answer {i}", "human": y} for i, y in enumerate(Y)]
    assert agree(rows, labels2, "human", key="output").n_used == 5


def test_labels_that_do_not_join_say_how_many_matched_and_show_unmatched_keys():
    labels = [{"id": f"x{i}", "human": "yes"} for i in range(5)]
    with pytest.raises(InputError) as e:
        agree(yes_no_rows(P), labels, "human")
    msg = str(e.value)
    assert "0 of 5 results matched" in msg and "'x0'" in msg and "'r0'" in msg and "--key" in msg


def test_partly_joining_labels_are_used_and_the_join_is_reported():
    labels = [{"id": "r0", "h": "yes"}, {"id": "r4", "h": "yes"}, {"id": "zz", "h": "no"}]
    rep = agree(yes_no_rows(P), labels, "h")
    assert rep.join.n_matched == 2 and rep.join.unmatched_label_keys == ["zz"]
    assert set(rep.join.unmatched_result_keys) == {"r1", "r2", "r3"}


def test_duplicate_label_keys_are_an_error():
    with pytest.raises(InputError, match="not unique"):
        agree(yes_no_rows(P), [{"id": "r0", "h": "yes"}, {"id": "r0", "h": "no"}], "h")


def test_label_values_the_judge_cannot_produce_are_an_error_naming_them():
    labels = [{"id": f"r{i}", "h": v} for i, v in enumerate(["yes", "maybe", "maybe", "no", "1"])]
    with pytest.raises(InputError) as e:
        agree(yes_no_rows(P), labels, "h")
    assert "'maybe' (2 rows)" in str(e.value) and "'1' (1 row)" in str(e.value) and "yes, no" in str(e.value)


def test_a_missing_label_column_lists_the_columns():
    with pytest.raises(InputError, match="no column 'human'.*id, h"):
        agree(yes_no_rows(P), [{"id": "r0", "h": "yes"}], "human")


def test_a_run_with_several_judges_needs_a_judge_name():
    rows = yes_no_rows(P) + [r.model_copy(update={"judge": "other"}) for r in yes_no_rows(P)]
    with pytest.raises(InputError, match="--judge"):
        agree(rows, [{"h": "yes"}], "h")


def test_numeric_judges_get_rank_correlations_and_large_rank_gaps_as_disagreements():
    rows = score_rows([1, 2, 3, 4, 5])
    labels = [{"id": str(i), "grade": g} for i, g in enumerate([0.1, 0.2, 0.3, 0.4, 0.0])]
    rep = agree(rows, labels, "grade")
    assert rep.kind == "numeric" and rep.accuracy is None
    # judge ranks 0..4, label ranks 1,2,3,4,0: rho = 1 - 6*sum(d^2)/(n(n^2-1)) = 1 - 6*20/120 = 0
    assert rep.spearman.statistic == pytest.approx(0.0)
    assert [d.row_id for d in rep.disagreements][0] == "4"


def test_numeric_judges_reject_labels_that_are_not_numbers():
    with pytest.raises(InputError, match="'good'.*numbers"):
        agree(score_rows([1, 2]), [{"id": "0", "g": 1}, {"id": "1", "g": "good"}], "g")


def test_read_labels_reads_jsonl_csv_and_json_and_rejects_other_files(tmp_path):
    (tmp_path / "l.jsonl").write_text('{"id": "a", "h": "yes"}\n\n{"id": "b", "h": "no"}\n')
    (tmp_path / "l.csv").write_text('id,h\na,"yes, surely"\n')
    (tmp_path / "l.json").write_text('[{"id": "a", "h": "yes"}]')
    (tmp_path / "l.txt").write_text("x")
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n{oops\n')
    assert [r["h"] for r in read_labels(tmp_path / "l.jsonl")] == ["yes", "no"]
    assert read_labels(tmp_path / "l.csv") == [{"id": "a", "h": "yes, surely"}]
    assert read_labels(tmp_path / "l.json") == [{"id": "a", "h": "yes"}]
    with pytest.raises(InputError, match="extension"):
        read_labels(tmp_path / "l.txt")
    with pytest.raises(InputError, match="bad.jsonl:2"):
        read_labels(tmp_path / "bad.jsonl")


# ------------------------------------------------------------------------------------- pairwise

PAIRWISE = get_judge("pairwise")
PAIR_INPUTS = {"question": "q?", "context": "c", "answer_1": "the good answer", "answer_2": "a poor answer"}


def pw(picked: int | None, inputs=PAIR_INPUTS):
    """A real pairwise result from model text: picked 1 or 2 (written as 0, as the seed says), None = garbage."""
    text = "no verdict" if picked is None else json.dumps({"better_response": 1 if picked == 1 else 0, "explanation": "x"})
    return PAIRWISE.score_text(text, **inputs)


def test_swap_inputs_swaps_only_the_two_answers():
    s = swap_inputs(PAIR_INPUTS)
    assert (s["answer_1"], s["answer_2"], s["question"]) == ("a poor answer", "the good answer", "q?")
    with pytest.raises(InputError, match="answer_2"):
        swap_inputs({"answer_1": "x"})


@pytest.mark.parametrize(
    ("forward", "swapped", "winner", "score"),
    [
        (1, 2, 1, 1.0),  # answer 1 first, then answer 1 second: the same answer both times
        (2, 1, 2, 0.0),
        (1, 1, "tie", 0.5),  # position 1 both times: the orders disagree
        (2, 2, "tie", 0.5),
    ],
)
def test_combine_orders_maps_the_swapped_verdict_back_and_ties_disagreements(forward, swapped, winner, score):
    r = combine_orders(pw(forward), pw(swapped))
    assert (r.value, r.score, winner_of(r)) == (winner, score, winner)
    assert r.passed is (winner == 1)
    assert r.details["consistent"] is (winner != "tie")
    assert [o["picked_position"] for o in r.details["orders"]] == [forward, swapped]
    assert r.judge_version.endswith("+both_orders")


def test_combine_orders_is_unscored_when_either_order_is():
    r = combine_orders(pw(1), pw(None))
    assert not r.scored and r.unscored_reason == "parse_error" and r.error.startswith("swapped order:")
    assert winner_of(r) is None


def test_both_orders_cancels_position_but_keeps_content_preference():
    def content(messages, fmt):  # prefers the answer containing "good", wherever it is
        text = messages[-1].content
        first = text.split("Response 1:")[-1].split("Response 2:")[0]
        return json.dumps({"better_response": 1 if "good" in first else 0, "explanation": "content"})

    def positional(messages, fmt):
        return json.dumps({"better_response": 1, "explanation": "first"})

    judge = BothOrders(PAIRWISE)
    r = judge.evaluate(ScriptedEngine(content), **PAIR_INPUTS)
    assert r.value == 1 and r.usage.calls == 2
    swapped = swap_inputs(PAIR_INPUTS)
    assert judge.evaluate(ScriptedEngine(content), **swapped).value == 2
    biased = [judge.evaluate(ScriptedEngine(positional), **PAIR_INPUTS) for _ in range(3)]
    assert {r.value for r in biased} == {"tie"}
    st = pairwise_stats("pairwise", [r, *biased])
    assert (st.wins_1, st.ties, st.wins_2, st.both_orders) == (1, 3, 0, True)
    assert (st.n_consistent, st.n_pairs_both, st.consistency_rate) == (1, 4, 0.25)
    assert (st.n_first, st.n_single, st.first_position_rate) == (7, 8, 7 / 8)
    assert (st.inconsistent_first, st.inconsistent_second) == (3, 0)


def test_both_orders_in_a_run_gives_what_evaluate_gives_queued_or_one_at_a_time(tmp_path):
    from localjudge import evaluate
    from localjudge.judges.protocol import SequentialJudge

    class OneAtATime(SequentialJudge):  # a judge that evaluates its rows itself, one at a time
        def __init__(self, judge):
            self._judge = judge

        def __getattr__(self, name):
            return getattr(self._judge, name)

        def render(self, **v):
            return self._judge.render(**v)

        def evaluate(self, engine, options=None, **v):
            return self._judge.evaluate(engine, options, **v)

    def content(messages, fmt):
        first = messages[-1].content.split("Response 1:")[-1].split("Response 2:")[0]
        return json.dumps({"better_response": 1 if "good" in first else 0, "explanation": "content"})

    rows = [PAIR_INPUTS, swap_inputs(PAIR_INPUTS), {**PAIR_INPUTS, "answer_1": "meh", "answer_2": "also meh"}]
    direct = [BothOrders(PAIRWISE).evaluate(ScriptedEngine(content), **r).value for r in rows]
    assert direct == [1, 2, "tie"]
    for i, judge in enumerate((BothOrders(PAIRWISE), BothOrders(OneAtATime(PAIRWISE)))):
        eng = ScriptedEngine(content)
        run = evaluate(rows, [judge], engine=eng, out=tmp_path / str(i))
        assert [r.result.value for r in run.results] == direct and eng.calls == 6


def test_single_order_stats_have_no_position_figures():
    st = pairwise_stats("pairwise", [pw(1), pw(2), pw(None)])
    assert (st.wins_1, st.wins_2, st.n_unscored, st.both_orders, st.consistency_rate) == (1, 1, 1, False, None)


def test_both_orders_refuses_a_judge_that_is_not_pairwise():
    with pytest.raises(InputError, match="not a pairwise judge"):
        BothOrders(get_judge("relevance_to_query"))


def test_pairwise_agreement_counts_both_order_ties_as_misses():
    rows = []
    outcomes = [(1, 2), (2, 1), (1, 1), (1, 2)]  # winners 1, 2, tie, 1
    for i, (f, s) in enumerate(outcomes):
        r = combine_orders(pw(f), pw(s))
        rows.append(
            ResultRow(
                row_index=i, row_id=str(i), judge="pairwise", inputs=PAIR_INPUTS, result=r, record=record(PAIRWISE.format.spec())
            )
        )
    labels = [{"id": str(i), "pref": p} for i, p in enumerate(["1", 2, 1, 2])]
    rep = agree(rows, labels, "pref")
    assert rep.kind == "pairwise" and rep.pairwise.n_correct == 2 and rep.pairwise.n_ties == 1
    assert rep.accuracy == 0.5 and rep.pairwise.accuracy_decided == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="1, 2 or tie"):
        agree(rows, [{"id": "0", "pref": "A"}], "pref")


def test_choice_judges_use_their_labels_as_classes_and_refuse_other_labels():
    j = get_judge("factuality")
    rows = []
    for i, label in enumerate(["C", "D", "C", "A"]):
        inputs = {"input": f"q{i}", "expected": "e", "output": "o"}
        rows.append(
            ResultRow(
                row_index=i,
                row_id=str(i),
                judge="factuality",
                inputs=inputs,
                result=j.score_text(json.dumps({"rationale": "r", "result": label}), **inputs),
                record=record(j.format.spec()),
            )
        )
    rep = agree(rows, [{"h": h} for h in ["C", "d", "D", "A"]], "h")  # labels match case-insensitively
    assert rep.labels == ["A", "B", "C", "D", "E"] and rep.accuracy == pytest.approx(3 / 4)
    assert rep.confusion[3] == [0, 0, 1, 1, 0]  # human D: judge said C once, D once
    with pytest.raises(InputError, match="'F' \\(1 row\\).*A, B, C, D, E"):
        agree(rows, [{"h": h} for h in ["C", "D", "F", "A"]], "h")


def test_run_flag_both_orders_wraps_pairwise_judges_only(tmp_path):
    from localjudge import evaluate

    def first_always_wins(messages, fmt):  # a position-biased judge: always "the first response"
        if fmt.kind == "pairwise_json":
            return '{"better_response": 1, "explanation": "first"}'
        return '{"rationale": "ok", "result": "yes"}'

    eng = ScriptedEngine(first_always_wins)
    rows = [{"question": "q", "context": "c", "answer_1": "a", "answer_2": "b", "input": "q", "output": "a"}]
    run = evaluate(rows, ["pairwise", "relevance_to_query"], engine=eng, out=tmp_path / "run", both_orders=True)
    by_judge = {r.judge: r.result for r in run.results}
    assert by_judge["pairwise"].value == "tie" and by_judge["pairwise"].score == 0.5  # the two orders disagree
    assert by_judge["relevance_to_query"].value == "yes"
    assert eng.calls == 3  # two orders for the pair, one call for the yes/no judge
