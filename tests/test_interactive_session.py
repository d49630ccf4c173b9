"""InteractiveSession: ask/tell over the pull-style selectors (hmrf.active.interactive).

The reference for every check is the selector's own ``fit`` with an oracle that gives
the same answers: a session must ask the same queries in the same order and end with
the same constraints.
"""

import gc
import threading

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from hmrf import Constraints, HMRFKMeans
from hmrf.active import (
    NPU,
    Explore,
    ExploreConsolidate,
    InteractiveSession,
    LabelOracle,
    MinMax,
    Query,
    RandomPairs,
)
from hmrf.active.interactive import parse_kind


def blobs(k=3, per=12, seed=0):
    rng = np.random.default_rng(seed)
    centres = 6.0 * rng.normal(size=(k, 2))
    X = np.vstack([rng.normal(c, 0.6, size=(per, 2)) for c in centres])
    return X, np.repeat(np.arange(k), per)


SELECTORS = {
    "random": lambda k, s: RandomPairs(random_state=s),
    "explore": lambda k, s: Explore(k, random_state=s),
    "explore_consolidate": lambda k, s: ExploreConsolidate(k, random_state=s),
    "minmax": lambda k, s: MinMax(k, random_state=s),
    "npu": lambda k, s: NPU(HMRFKMeans(n_clusters=k, max_iter=10), n_estimators=8, random_state=s),
}


def play(session, oracle, limit=None):
    """Answer the session's queries from ``oracle`` until it stops (or ``limit`` answers)."""
    pair, n = session.next_query(), 0
    while pair is not None and (limit is None or n < limit):
        pair = session.answer(oracle.query(*pair))
        n += 1
    return n


class ScriptedOracle:
    """Answers from labels, with a log that may start with earlier queries (never re-asked)."""

    def __init__(self, y, log=()):
        self.y = np.asarray(y)
        self.log = list(log)
        self.remaining = None

    def query(self, i, j):
        answer = bool(self.y[i] == self.y[j])
        self.log.append(Query(min(i, j), max(i, j), answer))
        return answer


@pytest.mark.parametrize("name", sorted(SELECTORS))
@pytest.mark.parametrize("seed", [0, 1])
def test_session_asks_what_fit_asks_and_ends_with_the_same_constraints(name, seed):
    X, y = blobs(seed=seed)
    budget = 14
    reference = SELECTORS[name](3, seed).fit(X, LabelOracle(y, budget=budget))
    selector = SELECTORS[name](3, seed)
    session = InteractiveSession(selector, X, budget=budget)
    play(session, LabelOracle(y))
    assert session.queries == reference.queries_
    assert session.constraints == reference.constraints_
    assert session.finished and session.stop_reason == reference.stop_reason_
    assert session.selector_.n_queries_ == reference.n_queries_
    assert not hasattr(selector, "constraints_")  # the selector passed in is never fitted


@pytest.mark.parametrize("name", ["random", "explore_consolidate"])
def test_dont_know_answers_are_logged_never_constraints_and_match_fit(name):
    X, y = blobs(seed=2)
    reference = SELECTORS[name](3, 0).fit(X, LabelOracle(y, budget=15, dont_know=0.3, random_state=5))
    session = InteractiveSession(SELECTORS[name](3, 0), X, budget=15)
    play(session, LabelOracle(y, dont_know=0.3, random_state=5))
    assert any(q.answer is None for q in session.queries)
    assert session.queries == reference.queries_
    assert session.constraints == reference.constraints_
    asked = {(q.i, q.j) for q in session.queries if q.answer is None}
    assert asked.isdisjoint(map(tuple, session.constraints.pairs.tolist()))


@pytest.mark.parametrize("name", ["random", "explore", "minmax"])
def test_constraints_during_selection_are_the_answers_so_far(name):
    X, y = blobs(seed=3)
    reference = SELECTORS[name](3, 1).fit(X, LabelOracle(y, budget=12))
    session = InteractiveSession(SELECTORS[name](3, 1), X, budget=12)
    oracle = LabelOracle(y)
    pair, t = session.next_query(), 0
    while pair is not None:
        answers = [(q.i, q.j, 1 if q.answer else -1) for q in session.queries if q.answer is not None]
        expected = (Constraints(len(X), [a[:2] for a in answers], [a[2] for a in answers])
                    if answers else Constraints.empty(len(X)))
        assert session.constraints == expected == reference.constraints_at(t)
        assert session.remaining == 12 - t and session.n_answers == t
        pair = session.answer(oracle.query(*pair))
        t += 1
    assert t == reference.n_queries_ and session.stop_reason == reference.stop_reason_
    assert session.constraints == reference.constraints_
    with pytest.raises(RuntimeError, match=f"no query is pending.*{reference.stop_reason_}"):
        session.answer(True)


def overlapping(per=15, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(c, 2.0, size=(per, 2)) for c in [(0, 0), (3, 0), (0, 3)]])
    return X, np.repeat(np.arange(3), per)


def test_consolidate_inferred_must_links_join_when_selection_ends():
    X, y = overlapping()
    reference = ExploreConsolidate(3, random_state=0).fit(X, LabelOracle(y, budget=20))
    assert reference.inferred_, "the test needs a run that infers must-links"
    session = InteractiveSession(ExploreConsolidate(3, random_state=0), X, budget=20)
    play(session, LabelOracle(y))
    answered = sum(q.answer is not None for q in session.queries)
    assert len(session.constraints) == answered + len(reference.inferred_)
    assert session.constraints == reference.constraints_


def test_close_withdraws_the_pending_query_keeps_answers_and_ends_the_thread():
    X, y = blobs(seed=5)
    session = InteractiveSession(ExploreConsolidate(3, random_state=0), X)
    oracle = LabelOracle(y)
    play(session, oracle, limit=6)
    pending = session.next_query()
    assert pending is not None
    thread = session._thread
    session.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert session.finished and session.next_query() is None
    assert len(session.queries) == 6 and pending not in [(q.i, q.j) for q in session.queries]
    # what the stopped selector knew, inferred must-links included
    assert session.constraints == session.selector_.constraints_
    assert session.selector_.n_queries_ == 6
    with pytest.raises(RuntimeError, match="no query is pending"):
        session.answer(False)


def test_an_abandoned_session_stops_its_worker():
    X, _ = blobs(seed=6)
    session = InteractiveSession(RandomPairs(random_state=0), X)
    thread = session._thread
    assert thread.is_alive() and session.next_query() is not None
    del session
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_own_pair_restarts_selection_warm_and_nothing_is_asked_twice():
    X, y = blobs(seed=7)
    session = InteractiveSession(ExploreConsolidate(3, random_state=0), X, budget=16)
    oracle = LabelOracle(y, dont_know=0.25, random_state=1)
    play(session, oracle, limit=5)
    before = session.constraints
    same = np.flatnonzero(y == y[0])
    own = (int(same[-2]), int(same[-1]))
    assert not ((before.pairs == sorted(own)).all(axis=1)).any()
    asked_before = list(session.queries)
    nxt = session.add_constraint(*own, "must")
    assert session.own_pairs == [(*sorted(own), 1)]
    assert session.constraints == before + Constraints(len(X), [own], [1])
    # the restarted selection is the selector's warm fit from everything known, with the
    # earlier queries in its oracle's log
    warm = session.constraints
    reference = ExploreConsolidate(3, random_state=0).fit(
        X, ScriptedOracle(y, log=asked_before), constraints=warm)
    later = [(q.i, q.j) for q in reference.queries_[:3]]
    got = []
    while nxt is not None and len(got) < 3:
        got.append(nxt)
        nxt = session.answer(bool(y[nxt[0]] == y[nxt[1]]))
    assert got == later
    # own pairs do not count against the budget; no pair is asked twice or asked after
    # it became a constraint
    play(session, LabelOracle(y))
    assert len(session.queries) == 16 and session.n_answers == 17
    pairs = [(q.i, q.j) for q in session.queries]
    assert len(set(pairs)) == len(pairs) and tuple(sorted(own)) not in pairs


def test_own_pair_after_the_selection_ended_is_kept():
    X, y = blobs(seed=8)
    session = InteractiveSession(Explore(3, random_state=0), X, budget=2)
    play(session, LabelOracle(y))
    assert session.finished
    assert session.add_constraint(0, 1, False) is None  # budget spent: nothing more to ask
    assert session.finished and session.own_pairs == [(0, 1, -1)]
    assert Query(0, 1, False) not in session.queries
    mask = (session.constraints.pairs == [0, 1]).all(axis=1)
    assert session.constraints.kind[mask].tolist() == [-1]


def test_same_seed_same_session():
    X, y = blobs(seed=9)
    runs = []
    for _ in range(2):
        s = InteractiveSession(MinMax(3, random_state=4), X, budget=10)
        play(s, LabelOracle(y))
        runs.append(s.queries)
    assert runs[0] == runs[1]


class _Failing(BaseEstimator):
    """A selector whose ``fit`` fails after ``after`` queries."""

    def __init__(self, after=1):
        self.after = after

    def fit(self, X, oracle, constraints=None):
        for t in range(self.after):
            oracle.query(0, t + 1)
        raise ArithmeticError("selector broke")


_GATE = threading.Event()  # module level: clone() deep-copies a selector's parameters


class _Gated(BaseEstimator):
    """Asks (0, 1) at once, then (0, 2) only when ``_GATE`` is set."""

    def fit(self, X, oracle, constraints=None):
        oracle.query(0, 1)
        _GATE.wait(10)
        oracle.query(0, 2)
        return self


def test_a_selector_error_reaches_the_caller_with_its_type():
    X, _ = blobs()
    with pytest.raises(ValueError, match="n_clusters"):
        InteractiveSession(ExploreConsolidate(n_clusters=500), X)
    session = InteractiveSession(_Failing(after=2), X)
    assert session.answer(True) == (0, 2)
    with pytest.raises(ArithmeticError, match="selector broke"):
        session.answer(False)
    assert session.finished and session.stop_reason.startswith("error: ArithmeticError")
    assert session.constraints == Constraints(len(X), [(0, 1), (0, 2)], [1, -1])


def test_after_a_timeout_the_session_waits_again():
    X, _ = blobs()
    _GATE.clear()
    session = InteractiveSession(_Gated(), X, timeout=0.2)
    assert session.next_query() == (0, 1)
    with pytest.raises(TimeoutError, match="_Gated computed no query within 0.2 s"):
        session.answer(True)
    assert session.queries == [Query(0, 1, True)]
    with pytest.raises(RuntimeError, match="still computing"):
        session.answer(False)  # the next query was never seen: no answer to it
    _GATE.set()
    assert session.next_query() == (0, 2)
    session.close()
    assert session.constraints == Constraints(len(X), [(0, 1)], [1])


def test_bad_input_is_named():
    X, _ = blobs()
    with pytest.raises(TypeError, match="fit"):
        InteractiveSession(object(), X)
    with pytest.raises(ValueError, match="budget"):
        InteractiveSession(RandomPairs(), X, budget=-1)
    with pytest.raises(ValueError, match="constraints refer to 3 points"):
        InteractiveSession(RandomPairs(), X, constraints=Constraints.empty(3))
    with pytest.raises(ValueError, match="timeout"):
        InteractiveSession(RandomPairs(), X, timeout=0)
    session = InteractiveSession(RandomPairs(random_state=0), X)
    with pytest.raises(TypeError, match="True .must-link."):
        session.answer("yes")
    with pytest.raises(ValueError, match="two different points"):
        session.add_constraint(3, 3, "must")
    with pytest.raises(ValueError, match=r"j=99 is out of range \[0, 35\]"):
        session.add_constraint(0, 99, "must")
    with pytest.raises(ValueError, match="kind must be"):
        session.add_constraint(0, 1, "maybe")
    session.add_constraint(0, 1, "cannot")
    with pytest.raises(ValueError, match=r"\(0, 1\) is already a cannot-link"):
        session.add_constraint(1, 0, "must")
    session.close()


def test_warm_start_constraints_are_kept_and_never_asked():
    X, y = blobs(seed=10)
    warm = Constraints.from_pairs(must_link=[(0, 1)], cannot_link=[(0, 20)], n=len(X))
    session = InteractiveSession(RandomPairs(random_state=0), X, budget=30, constraints=warm)
    play(session, LabelOracle(y))
    pairs = {(q.i, q.j) for q in session.queries}
    assert {(0, 1), (0, 20)}.isdisjoint(pairs)
    reference = RandomPairs(random_state=0).fit(X, LabelOracle(y, budget=30), constraints=warm)
    assert session.constraints == reference.constraints_


@pytest.mark.parametrize("kind, sign", [("must", 1), ("ML", 1), (True, 1), (1, 1), (np.bool_(False), -1),
                                        ("cannot_link", -1), ("cl", -1), (-1, -1)])
def test_parse_kind(kind, sign):
    assert parse_kind(kind) == sign
