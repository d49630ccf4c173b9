"""E-step inference engines: one signature, ``engine.map(unary, graph, init, rng)``.

See :class:`~hmrf.inference.base.InferenceEngine` for the contract and the exact problem
reduction (hard must-link contraction, isolated nodes) every engine gets for free.

:data:`ENGINES` is the one table of engine names: ``inference="bp+icm"`` in an
estimator, :func:`get_engine` and every ``--engine`` / ``--engines`` option of the
``hmrf`` command read it, so a name means the same engine everywhere. Adding an
engine to the library means adding one row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .auto import AutoEngine
from .base import InferenceEngine, InferenceResult, reduce_problem
from .bp import TRWS, BeliefPropagation
from .expansion import AlphaExpansion
from .greedy import GreedyFeasible
from .icm import ICM
from .lp import LPRelaxation
from .meanfield import MeanField
from .milp import ExactMILP

if TYPE_CHECKING:
    from typing import Any

__all__ = ["InferenceEngine", "InferenceResult", "ICM", "BeliefPropagation", "TRWS", "LPRelaxation",
           "ExactMILP", "AlphaExpansion", "AutoEngine", "GreedyFeasible", "MeanField", "reduce_problem",
           "get_engine", "ENGINES", "EngineSpec"]


@dataclass(frozen=True)
class EngineSpec:
    """One row of :data:`ENGINES`: how to build the engine a name stands for.

    Attributes
    ----------
    factory : callable
        ``factory() -> InferenceEngine``, a new engine with the row's settings.
    description : str
        One line, shown by ``hmrf <command> --help``.
    gives_bound : bool
        Whether the engine's results carry a lower bound (``InferenceResult.lower_bound``)
        on every problem it solves.
    """

    factory: Callable[[], InferenceEngine]
    description: str
    gives_bound: bool = False


#: Engine name -> :class:`EngineSpec`. Names are lower case; :func:`get_engine` and the
#: command line accept exactly these.
ENGINES = {
    "icm": EngineSpec(ICM, "iterated conditional modes from the previous labels (Basu 2005, §4.4.4)"),
    "bp": EngineSpec(BeliefPropagation,
                     "loopy max-product belief propagation, TRW-S on must-link components "
                     "(App. A.1)"),
    "bp+icm": EngineSpec(lambda: BeliefPropagation(polish="icm"),
                         "belief propagation, then an ICM polish"),
    "bp-trw": EngineSpec(lambda: BeliefPropagation(reweight="trw"),
                         "tree-reweighted max-product (TRW-S) everywhere: also a lower bound",
                         gives_bound=True),
    "trws": EngineSpec(TRWS,
                       "sequential tree-reweighted message passing (Kolmogorov 2006): a lower bound "
                       "that never decreases, stops when the gap closes", gives_bound=True),
    "lp": EngineSpec(LPRelaxation,
                     "Kleinberg-Tardos LP relaxation + randomized rounding (App. A.2); the LP "
                     "value is a lower bound", gives_bound=True),
    "lp+icm": EngineSpec(lambda: LPRelaxation(polish="icm"),
                         "LP relaxation + rounding, then an ICM polish", gives_bound=True),
    "lp-cvxpy": EngineSpec(lambda: LPRelaxation(backend="cvxpy"),
                           "the same LP stated in cvxpy (needs cvxpy)", gives_bound=True),
    "expansion": EngineSpec(AlphaExpansion,
                            "alpha-expansion graph cuts, QPBO moves for cannot-links (needs "
                            "PyMaxflow: hmrf[graphcut])"),
    "exact": EngineSpec(ExactMILP,
                        "exact MILP (HiGHS), 60 s limit per E-step: small problems only",
                        gives_bound=True),
    "mean_field": EngineSpec(MeanField,
                             "naive mean-field posteriors (coordinate descent on the free energy), "
                             "labels their argmax: soft EM's default"),
    "auto": EngineSpec(AutoEngine,
                       "belief propagation, then alpha-expansion moves from its labelling (with "
                       "PyMaxflow), the lower energy per component"),
}


def get_engine(spec: Any) -> InferenceEngine:
    """Resolve an engine from a name of :data:`ENGINES` or return an engine as is.

    Parameters
    ----------
    spec : str or InferenceEngine
        A name (case-insensitive), e.g. ``"icm"``, ``"bp"``, ``"lp+icm"``, built with
        the row's settings; or an engine object (anything with a ``map`` method),
        returned unchanged. Pass an instance to choose other settings
        (``LPRelaxation(n_rounds=50)``).

    Returns
    -------
    InferenceEngine

    Raises
    ------
    ValueError
        Unknown name (the message lists the names).
    TypeError
        Neither a name nor an object with a ``map`` method.

    Examples
    --------
    >>> get_engine("lp+icm").polish
    'icm'
    """
    if isinstance(spec, InferenceEngine):
        return spec
    if isinstance(spec, str):
        key = spec.strip().lower()
        if key in ENGINES:
            return ENGINES[key].factory()
        raise ValueError(
            f"unknown inference engine {spec!r}; choose from {', '.join(ENGINES)} or pass an engine."
        )
    if hasattr(spec, "map") and callable(spec.map):
        return spec
    raise TypeError(f"inference must be an engine name or an object with a .map() method; got {spec!r}.")
