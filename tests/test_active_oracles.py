"""Oracles: budget, log, "don't know", noise, the terminal session."""

import io

import numpy as np
import pytest

from hmrf.active import (
    BudgetExhausted,
    ExploreConsolidate,
    LabelOracle,
    Oracle,
    Query,
    TerminalOracle,
)


def test_label_oracle_answers_from_labels_and_logs_in_order():
    oracle = LabelOracle([0, 0, 1, 1], budget=3)
    assert oracle.query(1, 0) is True
    assert oracle.query(0, 2) is False
    assert oracle.remaining == 1
    assert oracle.log == [Query(0, 1, True), Query(0, 2, False)]


def test_budget_is_enforced():
    oracle = LabelOracle([0, 1, 0], budget=1)
    oracle.query(0, 1)
    with pytest.raises(BudgetExhausted, match="budget of 1"):
        oracle.query(0, 2)
    assert oracle.n_queries == 1


def test_zero_budget_and_unlimited():
    assert LabelOracle([0, 1], budget=0).remaining == 0
    assert LabelOracle([0, 1]).remaining is None
    with pytest.raises(ValueError, match="budget"):
        LabelOracle([0, 1], budget=-1)


def test_repeated_and_invalid_queries_raise():
    oracle = LabelOracle([0, 1, 1])
    oracle.query(0, 1)
    with pytest.raises(ValueError, match="already asked"):
        oracle.query(1, 0)
    with pytest.raises(ValueError, match="itself"):
        oracle.query(2, 2)
    with pytest.raises(ValueError, match="out of range"):
        oracle.query(0, 3)
    with pytest.raises(TypeError, match="integer"):
        oracle.query(0.5, 1)


def test_noise_flips_and_dont_know_rates():
    y = np.repeat([0, 1], 50)
    flip = LabelOracle(y, noise=1.0, random_state=0)
    assert flip.query(0, 1) is False and flip.query(0, 99) is True
    unsure = LabelOracle(y, dont_know=1.0, random_state=0)
    assert unsure.query(0, 1) is None
    assert unsure.log == [Query(0, 1, None)]
    # a 30 % noise rate flips about 30 % of 2000 answers
    noisy = LabelOracle(np.arange(2001) % 2, noise=0.3, random_state=1)
    wrong = sum(noisy.query(0, j) != (j % 2 == 0) for j in range(1, 2001))
    assert 0.26 < wrong / 2000 < 0.34
    with pytest.raises(ValueError, match="noise"):
        LabelOracle(y, noise=1.5)


def test_custom_oracle_must_answer_bool_or_none():
    class Bad(Oracle):
        def _answer(self, i, j):
            return "yes"

    with pytest.raises(TypeError, match="True, False or None"):
        Bad().query(0, 1)


def test_terminal_oracle_reads_answers_and_shows_both_points():
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    out = io.StringIO()
    oracle = TerminalOracle(
        X, budget=5, input=io.StringIO("y\nno\n?\nwhat\nn\n"), output=out, feature_names=["a", "b"]
    )
    assert oracle.query(0, 1) is True
    assert oracle.query(0, 2) is False
    assert oracle.query(1, 2) is None
    assert oracle.query(2, 3) is False  # "what" is asked again
    text = out.getvalue()
    assert "[0] a=1, b=2" in text and "[1] a=3, b=4" in text
    assert "could not read 'what'" in text
    assert [q.answer for q in oracle.log] == [True, False, None, False]


def test_terminal_oracle_quit_and_end_of_input_end_cleanly():
    oracle = TerminalOracle([[0.0], [1.0], [2.0]], input=io.StringIO("q\n"), output=io.StringIO())
    with pytest.raises(BudgetExhausted, match="stopped"):
        oracle.query(0, 1)
    assert oracle.log == []
    eof = TerminalOracle([[0.0], [1.0]], input=io.StringIO(""), output=io.StringIO())
    with pytest.raises(BudgetExhausted, match="end of input"):
        eof.query(0, 1)


def test_terminal_oracle_gives_up_after_retries_as_dont_know():
    oracle = TerminalOracle(
        describe=lambda i: f"doc {i}",
        input=io.StringIO("x\n" * 3),
        output=io.StringIO(),
        max_retries=3,
    )
    assert oracle.query(0, 1) is None


def test_selector_with_terminal_oracle_stops_when_the_person_quits():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.1, size=(10, 2)) for c in (0.0, 5.0, 10.0)])
    y = np.repeat([0, 1, 2], 10)
    answers = []
    # answer truthfully for four queries, then quit
    script = io.StringIO()
    sel = ExploreConsolidate(3, random_state=0)

    class Scripted(TerminalOracle):
        def _answer(self, i, j):
            if len(answers) == 4:
                self.input = io.StringIO("q\n")
            else:
                self.input = io.StringIO("y\n" if y[i] == y[j] else "n\n")
            a = super()._answer(i, j)
            answers.append(a)
            return a

    sel.fit(X, Scripted(X, output=script))
    assert sel.n_queries_ == 4
    assert "stopped" in sel.stop_reason_
    assert all(y[i] == y[j] for i, j in sel.constraints_.must_link)
