"""Ask/tell sessions: drive any query selector one answer at a time.

A selector *pulls* its answers (``fit(X, oracle)`` calls ``oracle.query`` and waits);
a notebook widget hears an answer later, in a callback. :class:`InteractiveSession` runs
the selector in a worker thread whose oracle hands each pair over a queue.
"""

from __future__ import annotations

import numbers
import queue
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import clone

from .._pairs import parse_kind as _parse_kind
from .._validation import check_data
from ..constraints import CANNOT_LINK, MUST_LINK, Constraints, check_constraints
from .oracles import BudgetExhausted, Query, _check_budget, check_answer

if TYPE_CHECKING:

    from .._typing import MatrixLike
    from .base import ActiveSelector

__all__ = ["InteractiveSession", "parse_kind"]

_STOP = object()  # sent instead of an answer: the oracle stops the selection


def parse_kind(kind: str | bool | int) -> int:
    """``+1`` (must-link) or ``-1`` (cannot-link) from ``True`` / ``False``, ``+1`` /
    ``-1`` or ``"must"``, ``"must_link"``, ``"ml"``, ``"cannot"``, ``"cannot_link"``,
    ``"cl"`` (any case).

    Examples
    --------
    >>> from hmrf.active.interactive import parse_kind
    >>> parse_kind("must"), parse_kind(False), parse_kind(-1)
    (1, -1, -1)
    """
    sign = _parse_kind(kind)
    if sign is not None:
        return sign
    raise ValueError(f"kind must be 'must' / 'cannot' (or True / False, +1 / -1); got {kind!r}.")


class _QueueOracle:
    """The worker's oracle: each query waits for the caller. It holds no reference to the
    session, so that a session can be garbage-collected (its finaliser stops the worker)."""

    def __init__(self, log, budget, events, answers):
        self.log = log  # the session's list of Query: the selector never re-asks these pairs
        self.budget = budget
        self._events, self._answers = events, answers
        self._stopped = False

    @property
    def remaining(self):
        return None if self.budget is None else max(self.budget - len(self.log), 0)

    def query(self, i, j):
        if self._stopped:
            raise BudgetExhausted("the interactive session was stopped.")
        if self.remaining == 0:
            raise BudgetExhausted(f"the session's budget of {self.budget} queries is spent.")
        a, b = (int(i), int(j)) if i < j else (int(j), int(i))
        self._events.put(("query", (a, b)))
        reply = self._answers.get()
        if reply is _STOP:
            self._stopped = True
            raise BudgetExhausted("the interactive session was stopped.")
        return reply


def _run_selector(selector, X, oracle, warm, events):
    """Body of the worker thread: one ``fit``, its outcome posted as an event."""
    try:
        selector.fit(X, oracle, constraints=warm if len(warm) else None)
    except BaseException as exc:  # noqa: BLE001 - every failure is handed to the caller
        events.put(("error", exc))
    else:
        events.put(("done", selector))


class InteractiveSession:
    """Ask/tell driving of an active selector: one query out, one answer in.

    Parameters
    ----------
    selector : ActiveSelector
        Any selector of :mod:`hmrf.active` (or an object with ``fit(X, oracle,
        constraints=None)``); it is cloned.
    X : array-like or sparse matrix of shape (n_samples, n_features)
    budget : int or None, default=None
        Number of queries that may be asked ("don't know" answers count; pairs added
        with :meth:`add_constraint` do not). ``None``: until the selector stops.
    constraints : Constraints, optional
        Supervision known before the first query (the selector's warm start).
    timeout : float or None, default=None
        Seconds to wait for the selector to compute a query before ``TimeoutError``
        (``None``: as long as it takes).

    Attributes
    ----------
    queries : list of Query
        Every query answered, in order, with the answer (``None``: don't know).
    own_pairs : list of (i, j, kind)
        Pairs added with :meth:`add_constraint`, ``kind`` +1 / -1.
    selector_ : ActiveSelector or None
        The fitted selector of the last selection that has ended (``None`` before).
    stop_reason : str or None
        Why the selection ended (the selector's ``stop_reason_``); ``None`` while
        queries are pending.

    Notes
    -----
    The selector runs in a daemon thread, blocked in ``oracle.query`` until
    :meth:`answer`; the two threads never run at once, so a session asks what the
    selector's own ``fit`` would ask. :meth:`add_constraint` stops the running selection
    and starts a new one warm from everything known. The must-links a selector infers
    (thesis §5.3) join :attr:`constraints` when a selection ends. Basu (2005), §5.1 (the
    query model).

    Examples
    --------
    >>> import numpy as np
    >>> from hmrf.active import ExploreConsolidate, InteractiveSession
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> y = np.array([0, 0, 1, 1])
    >>> session = InteractiveSession(ExploreConsolidate(n_clusters=2, random_state=0), X, budget=1)
    >>> pair = session.next_query()
    >>> while pair is not None:
    ...     pair = session.answer(bool(y[pair[0]] == y[pair[1]]))
    >>> session.queries, session.stop_reason
    ([Query(i=1, j=3, answer=False)], 'budget spent')
    >>> session.add_constraint(0, 1, "must")  # own pair; the budget is spent: no next query
    >>> session.constraints
    Constraints(n=4, must_link=1, cannot_link=1, hard=0)
    >>> session.close()
    """

    def __init__(self, selector: ActiveSelector, X: MatrixLike, *, budget: int | None = None,
                 constraints: Constraints | None = None, timeout: float | None = None) -> None:
        if not callable(getattr(selector, "fit", None)):
            raise TypeError(f"selector must have a fit(X, oracle) method; got {type(selector).__name__}.")
        self._X = check_data(X)
        self._n = int(self._X.shape[0])
        self._selector = clone(selector)
        self.budget = _check_budget(budget)
        if timeout is not None and (not isinstance(timeout, numbers.Real) or timeout <= 0):
            raise ValueError(f"timeout must be a positive number of seconds or None; got {timeout!r}.")
        self.timeout = timeout
        if constraints is None:
            constraints = Constraints.empty(self._n)
        check_constraints(constraints, self._n)
        self.queries: list[Query] = []
        self.own_pairs: list[tuple[int, int, int]] = []
        self.selector_ = None
        self.stop_reason: str | None = None
        self._base = constraints  # the warm start of the running selection
        self._run_answers: list[tuple[int, int, int]] = []  # answered in the running selection
        self._pending: tuple[int, int] | None = None
        self._running = False
        self._closed = False
        self._finalizer = None
        self._start()

    # ------------------------------------------------------------------ worker
    def _start(self) -> None:
        """Start a selection warm from ``_base`` and wait for its first query."""
        events, answers = queue.Queue(), queue.Queue()
        self._events, self._answers = events, answers
        self._run_answers = []
        self.stop_reason = None
        selector = clone(self._selector)
        oracle = _QueueOracle(self.queries, self.budget, events, answers)
        self._thread = threading.Thread(
            target=_run_selector, args=(selector, self._X, oracle, self._base, events),
            name=f"hmrf-{type(selector).__name__}-session", daemon=True,
        )
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(self, answers.put, _STOP)
        self._running = True
        self._thread.start()
        self._wait()

    def _wait(self) -> None:
        """Block until the worker asks its next query or ends; record which."""
        try:
            kind, payload = self._events.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(
                f"{type(self._selector).__name__} computed no query within {self.timeout} s."
            ) from None
        if kind == "query":
            self._pending = payload
            return
        self._pending = None
        self._running = False
        self._thread.join()
        if kind == "error":
            self._base = self._known_in_run()
            self._run_answers = []
            if isinstance(payload, BudgetExhausted):  # a selector that lets the oracle's stop through
                self.stop_reason = str(payload)
                return
            self.stop_reason = f"error: {type(payload).__name__}: {payload}"
            raise payload
        self.selector_ = payload
        self.stop_reason = getattr(payload, "stop_reason_", None) or "the selector stopped"
        fitted = getattr(payload, "constraints_", None)
        self._base = fitted if isinstance(fitted, Constraints) else self._known_in_run()
        self._run_answers = []

    def _known_in_run(self) -> Constraints:
        if not self._run_answers:
            return self._base
        arr = np.asarray(self._run_answers, dtype=np.int64)
        return self._base + Constraints(self._n, arr[:, :2], arr[:, 2])

    def _stop(self) -> None:
        """End the running selection cleanly (its pending query is withdrawn)."""
        if self._running:
            self._answers.put(_STOP)
            while self._running:
                self._wait()
            self._pending = None

    # -------------------------------------------------------------- public API
    @property
    def n_samples(self) -> int:
        """Number of points."""
        return self._n

    @property
    def finished(self) -> bool:
        """True when no query is pending (the selector stopped or the session closed)."""
        return self._pending is None

    @property
    def n_answers(self) -> int:
        """Answers given so far: queries answered (don't know included) plus own pairs."""
        return len(self.queries) + len(self.own_pairs)

    @property
    def remaining(self) -> int | None:
        """Queries left in the budget (``None``: unlimited)."""
        return None if self.budget is None else max(self.budget - len(self.queries), 0)

    @property
    def constraints(self) -> Constraints:
        """Everything known: warm start, answers, inferred must-links, own pairs."""
        return self._known_in_run()

    def next_query(self) -> tuple[int, int] | None:
        """The pair ``(i, j)``, ``i < j``, to ask next; ``None`` once selection has ended
        (after a ``TimeoutError`` this waits for the selector again)."""
        if self._pending is None and self._running:
            self._wait()
        return self._pending

    def answer(self, value: bool | None) -> tuple[int, int] | None:
        """Answer the pending query with True (must-link), False (cannot-link) or None
        ("don't know": not asked again); return the next query (``None``: ended).

        Raises
        ------
        RuntimeError
            If no query is pending.
        """
        value = check_answer(value, "an answer is")
        if self._pending is None and self._running:  # after a TimeoutError: never answer unseen
            raise RuntimeError("the selector is still computing its next query; call next_query().")
        if self._pending is None:
            raise RuntimeError(f"no query is pending ({self.stop_reason or 'the session is closed'}).")
        i, j = self._pending
        self.queries.append(Query(i, j, value))
        if value is not None:
            self._run_answers.append((i, j, MUST_LINK if value else CANNOT_LINK))
        self._pending = None
        self._answers.put(value)
        self._wait()
        return self._pending

    def add_constraint(self, i: int, j: int, kind: str | bool | int) -> tuple[int, int] | None:
        """Add a pair of the user's own choosing (``kind`` as :func:`parse_kind`) and
        restart selection with it; returns the restarted selection's next query.

        Raises
        ------
        ValueError
            If an index is out of range, ``i == j``, or the pair is already constrained.
        """
        sign = parse_kind(kind)
        for name, v in (("i", i), ("j", j)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                raise TypeError(f"point index {name} must be an integer; got {v!r}.")
            if not 0 <= int(v) < self._n:
                raise ValueError(f"point index {name}={int(v)} is out of range [0, {self._n - 1}].")
        a, b = sorted((int(i), int(j)))
        if a == b:
            raise ValueError(f"a constraint needs two different points; got i = j = {a}.")
        known = self.constraints
        hit = np.flatnonzero((known.pairs[:, 0] == a) & (known.pairs[:, 1] == b))
        if hit.size:
            what = "must-link" if known.kind[hit[0]] == MUST_LINK else "cannot-link"
            raise ValueError(f"the pair ({a}, {b}) is already a {what}.")
        self._stop()
        self.own_pairs.append((a, b, sign))
        self._base = self._base + Constraints(self._n, [[a, b]], [sign])
        if not self._closed:
            self._start()
        return self._pending

    def close(self) -> None:
        """End selection now; answers and constraints stay available."""
        self._stop()
        self._closed = True
        if self.stop_reason is None:
            self.stop_reason = "the session was closed"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        state = f"query={self._pending}" if self._pending is not None else f"finished: {self.stop_reason}"
        return (f"InteractiveSession({type(self._selector).__name__}, n_answers={self.n_answers}, "
                f"constraints={len(self.constraints)}, {state})")
