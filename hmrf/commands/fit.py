"""``hmrf fit``: cluster a data set with random constraints and report the scores."""

from __future__ import annotations

import time

import numpy as np

from ..constraints import Constraints
from ..datasets import DATASETS, load_dataset
from ..metrics import evaluate
from .curve import make_estimator

#: estimators that take pairwise constraints (see ``hmrf curve --help``), and KMeans
ESTIMATORS = ("hmrf-kmeans", "hmrf-kmeans-i", "pckmeans", "mpckmeans", "copkmeans", "kmeans")


def add_parser(sub):
    p = sub.add_parser("fit", help="fit one estimator on a data set with random constraints")
    p.add_argument("--dataset", default="iris", help=f"one of {sorted(DATASETS)}")
    p.add_argument("--estimator", default="hmrf-kmeans", choices=ESTIMATORS)
    p.add_argument("--emission", default="sqeuclidean", help="emission family (default sqeuclidean)")
    p.add_argument("--constraints", type=int, default=100, help="number of random labelled pairs")
    p.add_argument("--engine", default=None,
                   help="E-step inference engine (icm, bp, lp, exact; default: the estimator's own)")
    p.add_argument("--w", type=float, default=1.0, help="constraint weight")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    return p


def run(args) -> int:
    X, y = load_dataset(args.dataset, random_state=args.seed)
    k = int(np.unique(y).shape[0])
    rng = np.random.default_rng(args.seed)
    c = Constraints.sample_from_labels(y, args.constraints, rng)
    model = make_estimator(args.estimator, k, args.emission, args.w, args.engine)
    model.set_params(random_state=args.seed)
    t0 = time.perf_counter()
    if args.estimator == "kmeans":
        model.fit(X)
    else:
        model.fit(X, constraints=c)
    elapsed = time.perf_counter() - t0
    unconstrained = np.ones(y.shape[0], dtype=bool)
    unconstrained[c.constrained_points] = False
    all_scores = evaluate(y, model.labels_)
    held = evaluate(y, model.labels_, unconstrained)
    print(f"dataset      {args.dataset} (n={X.shape[0]}, d={X.shape[1]}, k={k})")
    engine = model.get_params().get("inference", "-")
    print(f"estimator    {args.estimator}  engine={engine}  emission={args.emission}  w={args.w}")
    print(f"constraints  {len(c)} ({c.n_must_link} must-link, {c.n_cannot_link} cannot-link)")
    print(f"NMI          {all_scores['nmi']:.4f}  (unconstrained points: {held['nmi']:.4f})")
    print(f"pairwise F   {all_scores['pairwise_f']:.4f}  (unconstrained points: {held['pairwise_f']:.4f})")
    print(f"objective    {model.objective_:.4f}")
    print(f"iterations   {model.n_iter_}  converged={model.converged_}  time={elapsed:.3f}s")
    return 0
