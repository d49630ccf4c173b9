"""The settings of :class:`~hmrf.inference.BeliefPropagation`, validated once, with the rules between them.

:class:`BPSettings` is a frozen dataclass built from the engine's parameters when it
runs (the engine itself only stores them, as scikit-learn's estimators do). Each
parameter's allowed values are declared in one table (:mod:`hmrf._params`); the rules
that tie parameters together are resolved here, once, into named fields the schedules
read (:mod:`~hmrf.inference.bp.schedules`):

* ``kernel`` and ``mode`` decide whether the max-product passes run compiled
  (``compiled``): sum-product always runs the NumPy passes;
* ``order="auto"`` is breadth-first with the compiled passes, colour classes without
  (``node_order``); ``"bfs"`` needs the compiled passes;
* ``schedule``, ``reweight`` and ``mode`` decide the schedule (``sequential``): a
  float ``reweight`` selects flooding, and so does sum-product with ``"trw"``;
* ``damping="auto"`` is ``fixed_damping = None`` (undamped, then 0.5 after
  ``AUTO_SWITCH`` iterations);
* ``max_iter="auto"`` is ``max_iter = 100`` for the message-passing schedules and
  ``trws_max_iter = 1000`` for the components that run
  :class:`~hmrf.inference.bp.trws.TRWS` (its own stopping rule ends them first); an
  integer caps both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..._optional import available, missing_message
from ..._params import Interval, Options, validate_params
from ..polish import check_polish
from .flooding_numpy import uniform_edge_appearance

if TYPE_CHECKING:
    from ...graph import PairwiseGraph
    from ..base import InferenceEngine

__all__ = ["BPSettings", "numba_available"]


def numba_available() -> bool:
    """Whether numba imports (it is an optional dependency)."""
    return available("numba")


@dataclass(frozen=True)
class BPSettings:
    """Validated settings of one belief-propagation run (parameters: see
    :class:`~hmrf.inference.BeliefPropagation`).

    Besides the parameters, the resolved fields ``compiled`` (max-product passes run by
    numba), ``node_order`` (``"bfs"`` or ``"colour"``), ``sequential`` (the sequential
    schedule, else flooding), ``fixed_damping`` (a number, or ``None`` for "auto") and
    ``polish_with`` (the polishing engine or ``None``) and ``trws_max_iter``; ``max_iter``
    is resolved to an integer.

    Raises
    ------
    ValueError
        A parameter outside its allowed values, or ``order="bfs"`` without the compiled
        passes.
    ImportError
        ``kernel="numba"`` without numba installed.
    """

    mode: str = "max"
    max_iter: int | str = "auto"
    damping: str | float = "auto"
    tol: float = 1e-6
    reweight: str | float | None = "auto"
    polish: str | None = None
    patience: int | None = None
    schedule: str = "auto"
    rel_gap: float = 1e-3
    kernel: str = "auto"
    order: str = "auto"
    compiled: bool = field(init=False)
    node_order: str = field(init=False)
    sequential: bool = field(init=False)
    fixed_damping: float | None = field(init=False)
    polish_with: object = field(init=False, repr=False)
    trws_max_iter: int = field(init=False)

    _parameter_constraints: ClassVar[dict] = {
        "mode": [Options("max", "sum")],
        "max_iter": [Options("auto"), Interval(Integral, 1, None)],
        "damping": [Options("auto"), Interval(Real, 0, 1, closed="left")],
        "tol": [Interval(Real, 0, None)],
        "reweight": [Options(None, "auto", "trw"), Interval(Real, 0, 1, closed="right")],
        "patience": [Options(None), Interval(Integral, 1, None)],
        "schedule": [Options("auto", "sequential", "flooding")],
        "rel_gap": [Interval(Real, 0, 1, closed="left")],
        "kernel": [Options("auto", "numba", "numpy")],
        "order": [Options("auto", "bfs", "colour")],
    }

    def __post_init__(self):
        validate_params(self, owner="BeliefPropagation")
        set_ = object.__setattr__  # frozen: the resolved fields are set once, here
        set_(self, "polish_with", check_polish(self.polish))
        compiled = self.kernel != "numpy" and self.mode == "max" and numba_available()
        if self.kernel == "numba" and self.mode == "max" and not compiled:
            raise ImportError(missing_message("numba", "BeliefPropagation(kernel='numba')"))
        if self.order == "bfs" and not compiled:
            raise ValueError("order='bfs' needs the compiled kernel (numba, max mode): the NumPy passes "
                             "update one colour class at a time; use order='colour' or 'auto'.")
        set_(self, "compiled", compiled)
        set_(self, "node_order", self.order if self.order != "auto" else ("bfs" if compiled else "colour"))
        flooding = (self.schedule == "flooding" or self.reweight not in (None, "auto", "trw")
                    or (self.mode == "sum" and self.reweight == "trw"))
        set_(self, "sequential", not flooding)
        set_(self, "fixed_damping", None if self.damping == "auto" else float(self.damping))
        auto_iter = isinstance(self.max_iter, str)
        set_(self, "trws_max_iter", 1000 if auto_iter else int(self.max_iter))
        set_(self, "max_iter", 100 if auto_iter else int(self.max_iter))

    @classmethod
    def of(cls, engine: InferenceEngine) -> BPSettings:
        """The settings of a :class:`~hmrf.inference.BeliefPropagation` engine."""
        return cls(**{name: getattr(engine, name) for name in cls._parameter_constraints | {"polish": None}})

    def edge_appearance(self, graph: PairwiseGraph) -> np.ndarray | None:
        """Tree-reweighting ``rho`` per edge of the flooding updates, ``None`` for ordinary BP."""
        if self.reweight in (None, "auto"):
            return None
        if self.reweight == "trw":
            return uniform_edge_appearance(graph)
        return np.full(graph.n_edges, float(self.reweight))
