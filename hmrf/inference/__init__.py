"""E-step inference engines: one signature, ``engine.map(unary, graph, init, rng)``.

See :class:`~hmrf.inference.base.InferenceEngine` for the contract and the exact problem
reduction (hard must-link contraction, isolated nodes) every engine gets for free.

:data:`ENGINES` is the one table of engine names: ``inference="bp"`` in an estimator,
:func:`get_engine` and every ``--engine`` / ``--engines`` option of the ``hmrf`` command
read it, so a name means the same engine everywhere. A name stands for one algorithm;
its settings are parameters, in Python (``BeliefPropagation(polish="icm")``) or in the
name (``"bp(polish=icm)"``, also on the command line). :func:`register_engine` adds a
name, and so does an installed package through the entry-point group ``hmrf.engines``
(docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._registry import Registry
from .._registry import Spec as EngineSpec
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
           "get_engine", "register_engine", "ENGINES", "EngineSpec"]

#: Engine name -> :class:`EngineSpec` (``factory(**params)`` and a one-line description),
#: a :class:`~hmrf._registry.Registry`: names are lower case; :func:`register_engine` and
#: the entry points of the group ``hmrf.engines`` add to it; a name in the registry's
#: ``renamed`` table raises a ``ValueError`` that gives the name to use.
ENGINES = Registry("engine", "hmrf.engines", {
    "icm": EngineSpec(ICM, "iterated conditional modes from the previous labels (Basu 2005, §4.4.4)"),
    "bp": EngineSpec(BeliefPropagation,
                     "loopy max-product belief propagation, TRW-S on must-link components "
                     "(App. A.1); bp(polish=icm) adds an ICM polish"),
    "trws": EngineSpec(TRWS,
                       "sequential tree-reweighted message passing (Kolmogorov 2006): a lower bound "
                       "that never decreases, stops when the gap closes"),
    "lp": EngineSpec(LPRelaxation,
                     "Kleinberg-Tardos LP relaxation + randomized rounding (App. A.2); the LP "
                     "value is a lower bound; lp(polish=icm), lp(solver=cvxpy)"),
    "expansion": EngineSpec(AlphaExpansion,
                            "alpha-expansion graph cuts, QPBO moves for cannot-links"),
    "exact": EngineSpec(ExactMILP,
                        "exact MILP (HiGHS), 60 s limit per E-step: small problems only"),
    "mean_field": EngineSpec(MeanField,
                             "naive mean-field posteriors (coordinate descent on the free energy), "
                             "labels their argmax: soft EM's default"),
    "auto": EngineSpec(AutoEngine,
                       "belief propagation, then alpha-expansion moves from its labelling, "
                       "the lower energy per component; alpha-expansion alone on large "
                       "must-link-only components"),
    "greedy": EngineSpec(GreedyFeasible,
                         "COP-KMeans' greedy assignment: hard constraints only, soft ones ignored "
                         "(Wagstaff et al. 2001)"),
}, renamed={
    "bp+icm": "'bp(polish=icm)', in Python BeliefPropagation(polish=\"icm\")",
    "lp+icm": "'lp(polish=icm)', in Python LPRelaxation(polish=\"icm\")",
    "bp-trw": "'trws', in Python TRWS()",
    "lp-cvxpy": "'lp(solver=cvxpy)', in Python LPRelaxation(solver=\"cvxpy\")",
}, noun="inference engine")


def register_engine(name: str, factory: Callable[..., Any], description: str | None = None, *,
                    replace: bool = False) -> None:
    """Give an E-step engine a name, usable wherever the library's own are.

    After ``register_engine("sa", SimulatedAnnealing)``, ``HMRFKMeans(inference="sa")``,
    ``get_engine("sa(n_sweeps=50)")`` and ``hmrf compare --plugin MODULE --engines icm,sa``
    build it (the command line imports ``MODULE``, which registers the name). An installed
    package makes the name known without an import through an entry point instead::

        [project.entry-points."hmrf.engines"]
        sa = "my_package.annealing:SimulatedAnnealing"

    Parameters
    ----------
    name : str
        Lower-case letters, digits and ``_ . + -`` (the command line splits on spaces,
        commas and parentheses); case-insensitive when looked up.
    factory : callable
        ``factory(**params) -> engine``: an :class:`~hmrf.inference.InferenceEngine`
        subclass or a function returning an object with its ``map`` method.
    description : str, optional
        One line for ``--help``; by default the first line of the factory's docstring.
    replace : bool, default=False
        Redefine a name that exists (the library's own included).

    Raises
    ------
    ValueError
        A name already taken (without ``replace``), or not of the form above.
    TypeError
        A factory that is not callable.

    See Also
    --------
    hmrf.testing.check_engine : the contracts a registered engine should pass.

    Examples
    --------
    >>> from hmrf.inference import ICM, get_engine, register_engine, ENGINES
    >>> class PatientICM(ICM):
    ...     \"\"\"ICM with a large sweep budget.\"\"\"
    >>> register_engine("patient-icm", PatientICM)
    >>> type(get_engine("patient-icm")).__name__, ENGINES["patient-icm"].description
    ('PatientICM', 'ICM with a large sweep budget')
    >>> del ENGINES["patient-icm"]
    """
    ENGINES.register(name, factory, description, replace=replace)


def get_engine(spec: Any) -> InferenceEngine:
    """Resolve an engine from a name of :data:`ENGINES` or return an engine as is.

    Parameters
    ----------
    spec : str or InferenceEngine
        A name (case-insensitive) of :data:`ENGINES`, optionally with keyword arguments,
        ``"lp(polish=icm, n_rounds=50)"`` (Python literals or bare words; checked here),
        or an engine object (anything with a ``map`` method), returned unchanged.

    Raises
    ------
    ValueError
        Unknown name (the message lists the names), a name in the registry's ``renamed``
        table (the message gives the name to use), or parameters the engine refuses.
    TypeError
        Neither a name nor an object with a ``map`` method.

    Examples
    --------
    >>> from hmrf.inference import get_engine
    >>> get_engine("lp(polish=icm)").polish
    'icm'
    """
    if isinstance(spec, InferenceEngine):
        return spec
    if isinstance(spec, str):
        engine = ENGINES.build(spec)
        if not callable(getattr(engine, "map", None)):
            raise TypeError(f"the factory of engine {spec!r} returned {engine!r}, which has no .map() "
                            "method.")
        if "(" in spec and isinstance(engine, InferenceEngine):
            engine.check_params()  # parameters given in the name: refused here, before any fit
        return engine
    if callable(getattr(spec, "map", None)):
        return spec
    raise TypeError(f"inference must be an engine name or an object with a .map() method; got {spec!r}.")
