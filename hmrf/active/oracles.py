"""Oracles: who answers "are x_i and x_j in the same cluster?" (Basu 2005, §5.1).

An answer is ``True`` (must-link), ``False`` (cannot-link) or ``None`` ("don't know":
never asked again). An oracle has a *budget* and a *log* of every query. Any object
with ``query(i, j)`` and an integer-or-``None`` ``remaining`` serves
(:class:`OracleLike`).
"""

from __future__ import annotations

import numbers
import sys
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TextIO

    from numpy.typing import ArrayLike

    from .._typing import MatrixLike, RandomLike

__all__ = ["Query", "BudgetExhausted", "OracleLike", "Oracle", "LabelOracle", "TerminalOracle"]


class Query(NamedTuple):
    """One logged query: the pair asked (``i < j``) and the answer (True, False or None)."""

    i: int
    j: int
    answer: bool | None


class BudgetExhausted(Exception):
    """The oracle will answer no more queries (budget spent or the person quit)."""


@runtime_checkable
class OracleLike(Protocol):
    """What a selector needs from an oracle."""

    remaining: int | None

    def query(self, i: int, j: int) -> bool | None: ...


def _check_budget(budget):
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer or None (unlimited); got {budget!r}.")
    return int(budget)


def check_answer(value, who: str) -> bool | None:
    """``value`` if True, False or None (a NumPy bool as bool), else a TypeError."""
    if isinstance(value, np.bool_):
        value = bool(value)
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{who} {value!r}, not True, False or None (True (must-link), False "
                        "(cannot-link), None (don't know)).")
    return value


def _check_rate(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1]; got {value!r}.")
    return float(value)


class Oracle(ABC):
    """Base class of oracles: a ``budget`` (``None``: unlimited; "don't know" answers
    count) and a ``log`` of every :class:`Query` around ``_answer(i, j)``. Asking a pair
    twice raises ``ValueError``: queries are never repeated (§5.1)."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = _check_budget(budget)
        self.log: list[Query] = []
        self._asked: set[tuple[int, int]] = set()

    @property
    def n_queries(self) -> int:
        """Number of queries answered so far."""
        return len(self.log)

    @property
    def remaining(self) -> int | None:
        """Queries left in the budget (``None``: unlimited)."""
        return None if self.budget is None else max(self.budget - len(self.log), 0)

    def _check_index(self, v, name):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"query index {name} must be an integer; got {v!r}.")
        v = int(v)
        size = self._size()
        if v < 0 or (size is not None and v >= size):
            hi = "" if size is None else f" [0, {size - 1}]"
            raise ValueError(f"query index {name}={v} is out of range{hi}.")
        return v

    def _size(self) -> int | None:
        """Number of points the oracle knows about (``None``: unknown)."""
        return None

    def query(self, i: int, j: int) -> bool | None:
        """Answer whether points ``i`` and ``j`` belong to the same cluster: True, False
        or None ("don't know").

        Raises
        ------
        BudgetExhausted
            If the budget is spent (or, for a person, they quit).
        ValueError
            If ``i == j``, an index is out of range, or the pair was asked before.
        """
        i, j = self._check_index(i, "i"), self._check_index(j, "j")
        if i == j:
            raise ValueError(f"cannot query a point against itself (i = j = {i}).")
        a, b = (i, j) if i < j else (j, i)
        if (a, b) in self._asked:
            raise ValueError(f"the pair ({a}, {b}) was already asked; queries are never repeated.")
        if self.remaining == 0:
            raise BudgetExhausted(f"the oracle's budget of {self.budget} queries is spent.")
        answer = check_answer(self._answer(a, b), f"{type(self).__name__}._answer returned")
        self._asked.add((a, b))
        self.log.append(Query(a, b, answer))
        return answer

    @abstractmethod
    def _answer(self, i: int, j: int) -> bool | None:
        """The answer for the pair ``i < j`` (budget and log are handled by the base)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(budget={self.budget}, n_queries={self.n_queries})"


class LabelOracle(Oracle):
    """Answer queries from class labels: must-link iff ``y[i] == y[j]``.

    The oracle of the experiments of Basu (2005, §5.5.2) and Xiong et al. (2014,
    §4.1.2); ``noise`` is the probability that a definite answer is flipped,
    ``dont_know`` that of answering ``None`` (both drawn from ``random_state``).

    Examples
    --------
    >>> from hmrf.active import LabelOracle
    >>> oracle = LabelOracle([0, 0, 1], budget=2)
    >>> oracle.query(0, 1), oracle.query(2, 0), oracle.remaining
    (True, False, 0)
    """

    def __init__(self, y: ArrayLike, budget: int | None = None, *, noise: float = 0.0, dont_know: float = 0.0,
                 random_state: RandomLike = None) -> None:
        super().__init__(budget)
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D with one label per point; got shape {y.shape}.")
        self.y = y.copy()
        self.noise = _check_rate(noise, "noise")
        self.dont_know = _check_rate(dont_know, "dont_know")
        self._rng = np.random.default_rng(random_state)

    def _size(self):
        return int(self.y.shape[0])

    def _answer(self, i, j):
        if self.dont_know > 0 and self._rng.random() < self.dont_know:
            return None
        same = bool(self.y[i] == self.y[j])
        if self.noise > 0 and self._rng.random() < self.noise:
            same = not same
        return same


_YES = {"y", "yes", "m", "ml", "must", "same", "1"}
_NO = {"n", "no", "c", "cl", "cannot", "different", "0"}
_DONT_KNOW = {"?", "d", "dk", "don't know", "dont know", "skip"}
_QUIT = {"q", "quit", "exit", "stop"}


class TerminalOracle(Oracle):
    """Ask a person at the terminal whether two points belong to the same cluster.

    Reads ``y`` (must-link), ``n`` (cannot-link), ``?`` (don't know) or ``q`` (quit,
    as is end of input); anything else is asked again, at most ``max_retries`` times,
    then counts as "don't know".

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), optional
        The points, shown as feature vectors (non-zero entries for sparse rows) unless
        ``describe(i) -> str`` is given (e.g. the text of a document).
    input, output : file-like, optional
        Streams of answers and prompts (default ``sys.stdin`` and ``sys.stdout``).

    Examples
    --------
    >>> import io
    >>> from hmrf.active import TerminalOracle
    >>> out = io.StringIO()
    >>> oracle = TerminalOracle([[0.0], [1.0]], input=io.StringIO("y\\n"), output=out)
    >>> oracle.query(0, 1)
    True
    """

    def __init__(self, X: MatrixLike | None = None, budget: int | None = None, *,
                 describe: Callable[..., Any] | None = None, feature_names: Sequence[str] | None = None,
                 input: TextIO | None = None, output: TextIO | None = None, max_retries: int = 5) -> None:
        super().__init__(budget)
        if X is not None and not sp.issparse(X):
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}.")
        self.X = X
        self.describe = describe
        self.feature_names = None if feature_names is None else [str(f) for f in feature_names]
        self.input = input
        self.output = output
        self.max_retries = int(max_retries)

    def _size(self):
        return None if self.X is None else int(self.X.shape[0])

    def _show(self, i) -> str:
        if self.describe is not None:
            return str(self.describe(i))
        if self.X is None:
            return "(no description)"
        if sp.issparse(self.X):
            row = self.X.getrow(i).tocoo()
            items = zip(row.col.tolist(), row.data.tolist(), strict=True)
        else:
            row = np.asarray(self.X[i]).ravel()
            items = enumerate(row.tolist())
        names = self.feature_names
        parts = [f"{names[c] if names else c}={v:.4g}" for c, v in items]
        return ", ".join(parts) if parts else "(empty)"

    def _answer(self, i, j):
        out = self.output if self.output is not None else sys.stdout
        inp = self.input if self.input is not None else sys.stdin
        budget = "" if self.budget is None else f" of {self.budget}"
        out.write(f"\nQuery {self.n_queries + 1}{budget}: are these two in the same cluster?\n")
        out.write(f"  [{i}] {self._show(i)}\n  [{j}] {self._show(j)}\n")
        for _ in range(max(self.max_retries, 1)):
            out.write("  same cluster? [y]es / [n]o / [?] don't know / [q]uit: ")
            out.flush()
            line = inp.readline()
            if line == "":
                raise BudgetExhausted("end of input: no more answers.")
            reply = line.strip().lower()
            if reply in _YES:
                return True
            if reply in _NO:
                return False
            if reply in _DONT_KNOW:
                return None
            if reply in _QUIT:
                raise BudgetExhausted("the user stopped answering queries.")
            out.write(f"  (could not read {line.strip()!r}; answer y, n, ? or q)\n")
        out.write("  (no valid answer: recorded as don't know)\n")
        return None
