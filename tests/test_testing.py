"""hmrf.testing: the library's own engines, families and potentials pass the conformance
checks, and each contract catches an object that breaks it, naming the contract."""

import dataclasses
import re
import warnings

import numpy as np
import pytest
from plugin_example import (
    BiasedBernoulli,
    ForgetfulAnnealing,
    NaiveBernoulli,
    StaleOrdinalPotential,
)

from hmrf import Constraints
from hmrf.emissions import (
    KL,
    IDivergence,
    ItakuraSaito,
    Mahalanobis,
    Multinomial,
    SquaredEuclidean,
    VonMisesFisher,
)
from hmrf.emissions.base import (
    OPTIONAL_MEMBERS,
    REQUIRED_MEMBERS,
    EmissionFamily,
    EmissionParams,
    EmissionProtocol,
)
from hmrf.inference import (
    ICM,
    TRWS,
    AlphaExpansion,
    AutoEngine,
    BeliefPropagation,
    ExactMILP,
    GreedyFeasible,
    InferenceResult,
    LPRelaxation,
    MeanField,
)
from hmrf.inference.base import Solution
from hmrf.potentials import DistanceScaledPotts, PottsConstraints, TablePotential
from hmrf.testing import (
    brute_force,
    check_emission,
    check_engine,
    check_potential,
    engine_checks,
    parametrize_with_checks,
    random_problem,
)

C6 = Constraints.from_pairs(must_link=[(0, 1), (2, 3)], cannot_link=[(1, 4)], n=6)
TABLE = np.full((3, 3), 2.0)
np.fill_diagonal(TABLE, 0.5)

ENGINES = [ICM(), BeliefPropagation(), BeliefPropagation(polish="icm"), TRWS(), LPRelaxation(),
           LPRelaxation(polish="icm"), ExactMILP(), GreedyFeasible(), AutoEngine(), AlphaExpansion(),
           MeanField()]
FAMILIES = [SquaredEuclidean(), KL(), IDivergence(), ItakuraSaito(), VonMisesFisher(), Mahalanobis(),
            Mahalanobis(metric="full"), Multinomial()]
POTENTIALS = [PottsConstraints(C6, 1.5), TablePotential(6, [(0, 1), (3, 4)], TABLE), DistanceScaledPotts(C6)]


@parametrize_with_checks(ENGINES + FAMILIES + POTENTIALS)
def test_the_library_keeps_its_own_contracts(obj, check):
    check(obj)


def test_parametrize_with_checks_names_each_test_by_class_and_contract():
    mark = parametrize_with_checks([ICM(), KL()])
    ids = [p.id for p in mark.args[1]]
    assert ids[:len(engine_checks())] == [f"ICM-{name}" for name in engine_checks()]
    assert "KL-m_step" in ids and mark.args[0] == "obj, check"
    with pytest.raises(TypeError, match="neither an engine"):
        parametrize_with_checks([object()])


def test_the_family_protocol_lists_every_member_once_required_or_optional():
    members = {m for m in dir(EmissionProtocol) if not m.startswith("_")} | set(EmissionProtocol.__annotations__)
    assert members == set(REQUIRED_MEMBERS) | set(OPTIONAL_MEMBERS)
    assert not set(REQUIRED_MEMBERS) & set(OPTIONAL_MEMBERS)
    assert set(REQUIRED_MEMBERS) == set(EmissionFamily.__abstractmethods__)
    assert all(isinstance(f, EmissionProtocol) for f in FAMILIES)
    # and the protocol is every public member of the base class: nothing the loops call is missing
    public = {m for m in dir(EmissionFamily) if not m.startswith("_")}
    assert public == members, sorted(public ^ members)


def test_brute_force_is_the_minimum_over_every_labelling():
    rng = np.random.default_rng(0)
    unary, g = random_problem(rng, 4, 3, 6, tables=True, p_hard=0.5)
    best, y = brute_force(unary, g)
    every = [g.energy(np.array(lab), unary) for lab in np.ndindex(3, 3, 3, 3)]
    assert best == pytest.approx(min(every)) and g.energy(y, unary) == pytest.approx(best)


# ------------------------------------------------------- broken engines
class MisreportsEnergy:
    """Argmin labels, with the unary energy only (the pairwise part forgotten)."""

    def map(self, unary, graph, init=None, rng=None, callback=None):
        labels = np.asarray(unary).argmin(axis=1)
        return InferenceResult(labels, float(np.asarray(unary).min(axis=1).sum()))


class BreaksHardLinks(MisreportsEnergy):
    """Argmin labels with their true energy: hard cannot-links may be broken."""

    def map(self, unary, graph, init=None, rng=None, callback=None):
        labels = np.asarray(unary).argmin(axis=1)
        return InferenceResult(labels, graph.energy(labels, unary))


class BoundTooHigh(ExactMILP):
    """The exact answer, with a bound above it."""

    def _solve(self, unary, graph, init, rng, notify):
        out = super()._solve(unary, graph, init, rng, notify)
        out.lower_bound = out.lower_bound + 1.0
        return out


class GlobalRandom(ICM):
    """Labels drawn by NumPy's global generator, not by ``rng`` (and not monotone)."""

    monotone_from_init = False

    def _solve(self, unary, graph, init, rng, notify):
        return Solution(np.random.randint(0, unary.shape[1], unary.shape[0]))


class ShiftsCosts(ICM):
    """Subtracts each row's minimum from the caller's unary costs, in place."""

    def map(self, unary, graph=None, init=None, rng=None, callback=None):
        if isinstance(unary, np.ndarray) and unary.shape[0] > 2:
            unary -= unary.min(axis=1, keepdims=True)
        return super().map(unary, graph, init, rng, callback)


class IgnoresIsolated(BreaksHardLinks):
    """Label 0 everywhere when there are no factors."""

    def map(self, unary, graph, init=None, rng=None, callback=None):
        if graph.n_edges == 0:
            labels = np.zeros(np.asarray(unary).shape[0], dtype=np.int64)
            return InferenceResult(labels, graph.energy(labels, unary))
        return ICM().map(unary, graph, init=init, rng=rng)


class WrongCallback(ICM):
    """Reports the energy of the next labels with the current ones to its callback."""

    def map(self, unary, graph=None, init=None, rng=None, callback=None):
        wrapped = None if callback is None else (lambda it, y, e, b: callback(it, y, e + 1.0, b))
        return super().map(unary, graph, init, rng, wrapped)


@pytest.mark.parametrize("engine, contract", [
    (MisreportsEnergy(), "energy reported = energy recomputed"),
    (BreaksHardLinks(), "hard constraints kept or InfeasibleError"),
    (BoundTooHigh(), "lower bound <= exact optimum <= energy"),
    (ForgetfulAnnealing(), "monotone from init"),
    (GlobalRandom(), "same rng, same result"),
    (ShiftsCosts(), "inputs untouched"),
    (IgnoresIsolated(), "no factors: the argmin of each row"),
    (WrongCallback(), "callback energies = energies of its labels"),
])
def test_a_broken_engine_fails_naming_the_contract(engine, contract):
    with pytest.raises(AssertionError, match=re.escape(f"{type(engine).__name__} breaks the contract '{contract}'")):
        check_engine(engine)


# ------------------------------------------------------ broken families
class MutatesInput(SquaredEuclidean):
    def prepare(self, X):
        X -= 0.0 * X + 1e-3  # "centring" the caller's array
        return X


class ForgetsClusterCost(SquaredEuclidean):
    """Reports a per-cluster cost that unary does not add."""

    def cluster_cost(self, params, normalizer="constant"):
        return np.arange(params.n_clusters, dtype=np.float64)


class MeansAsStatistics(SquaredEuclidean):
    """Statistics that hold each cluster's mean where its sum belongs: right for all the
    rows at once, wrong once the blocks of a pass are added up."""

    def statistics(self, X, assignment, n_clusters, normalizer="constant", shift=None):
        st = super().statistics(X, assignment, n_clusters, normalizer, shift)
        return dataclasses.replace(st, sums=st.sums / np.maximum(st.counts, 1)[:, None])

    def update(self, stats, params=None, normalizer="constant", context=None):
        return EmissionParams(stats.sums)


class DoublePrecision(SquaredEuclidean):
    def unary(self, X, params, normalizer="constant", data=None):
        return super().unary(np.asarray(X, dtype=np.float64), params, normalizer)


class WrongLinearCosts(SquaredEuclidean):
    def linear_costs(self, params, normalizer="constant", dtype=np.float64):
        lin = super().linear_costs(params, normalizer, dtype)
        return lin.with_offset(np.ones(params.n_clusters))


class NoInformation(SquaredEuclidean):
    """Data terms and the GEMM form, without the divergence the data scale needs."""

    def divergence_to(self, X, point):
        return None


class AcceptsAnything(KL):
    def prepare(self, X):
        return X


@pytest.mark.parametrize("family, contract", [
    (MutatesInput(), "prepare checks the domain and modifies nothing"),
    (AcceptsAnything(), "prepare checks the domain and modifies nothing"),
    (ForgetsClusterCost(), "unary = distortion + cluster_cost"),
    (MeansAsStatistics(), "statistics add up over blocks of rows"),
    (BiasedBernoulli(), "M-step is the minimiser of the summed costs"),
    (WrongLinearCosts(), "linear_costs = unary"),
    (NoInformation(), "data_terms with linear_costs need divergence_to"),
    (NaiveBernoulli(), "a finite data scale (w='auto')"),
    (DoublePrecision(), "float32 kept"),
])
def test_a_broken_family_fails_naming_the_contract(family, contract):
    X = (np.random.default_rng(0).random((30, 5)) < 0.4).astype(float)
    X[:, -1] = 0.0  # a feature that is 0 in every row (the Bernoulli families' trap)
    if not isinstance(family, (BiasedBernoulli, NaiveBernoulli)):
        X = None  # the default data
    bad_X = [[-1.0, 0.5]] if isinstance(family, KL) else None  # negative counts
    match = re.escape(f"{type(family).__name__} breaks the contract '{contract}'")
    with pytest.raises(AssertionError, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaiveBernoulli's own 0 * inf
        check_emission(family, X=X, bad_X=bad_X)


# ----------------------------------------------------- broken potentials
class WrongSize(TablePotential):
    @property
    def n_nodes(self):
        return 7


class MutatesX(PottsConstraints):
    def graph(self, X=None, params=None, n_clusters=None):
        if X is not None:
            X[0, 0] += 1.0
        return super().graph(X, params, n_clusters)


@pytest.mark.parametrize("potential, contract", [
    (WrongSize(6, [(0, 1)], TABLE), "graph: factors on n_nodes nodes, k x k tables"),
    (StaleOrdinalPotential(6, [(0, 1), (2, 3)]), "depends_on_params declared"),
    (MutatesX(C6), "energy = unary + the potential's factors"),
])
def test_a_broken_potential_fails_naming_the_contract(potential, contract):
    with pytest.raises(AssertionError,
                       match=re.escape(f"{type(potential).__name__} breaks the contract '{contract}'")):
        check_potential(potential, X=np.random.default_rng(0).random((potential.n_nodes, 2)))

