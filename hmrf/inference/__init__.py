"""E-step inference engines: one signature, ``engine.map(unary, graph, init, rng)``.

See :class:`~hmrf.inference.base.InferenceEngine` for the contract and the exact problem
reduction (hard must-link contraction, isolated nodes) every engine gets for free.
"""

from .base import InferenceEngine, InferenceResult, reduce_problem
from .bp import BeliefPropagation
from .icm import ICM
from .lp import LPRelaxation
from .milp import ExactMILP

__all__ = ["InferenceEngine", "InferenceResult", "ICM", "BeliefPropagation", "LPRelaxation",
           "ExactMILP", "reduce_problem", "get_engine"]

_ENGINES = {"icm": ICM, "bp": BeliefPropagation, "lp": LPRelaxation, "exact": ExactMILP}


def get_engine(spec) -> InferenceEngine:
    """Resolve an engine from a name or return an engine instance as is.

    Names: ``"icm"`` (:class:`ICM`), ``"bp"`` (:class:`BeliefPropagation`), ``"lp"``
    (:class:`LPRelaxation`), ``"exact"`` (:class:`ExactMILP`), each with default
    parameters; pass an instance to set them (``LPRelaxation(polish="icm")``).
    """
    if isinstance(spec, InferenceEngine):
        return spec
    if isinstance(spec, str):
        key = spec.lower()
        if key in _ENGINES:
            return _ENGINES[key]()
        raise ValueError(
            f"unknown inference engine {spec!r}; choose from {sorted(_ENGINES)} or pass an engine."
        )
    if hasattr(spec, "map") and callable(spec.map):
        return spec
    raise TypeError(f"inference must be an engine name or an object with a .map() method; got {spec!r}.")
