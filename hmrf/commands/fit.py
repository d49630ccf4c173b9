"""``hmrf fit``: cluster one data set and write the labels, a summary and a plot."""

from __future__ import annotations

import csv
import json
import time

from ..estimators import ESTIMATORS, estimator_key
from . import _cluster, _image
from . import _common as common

SUMMARY = "cluster one data set (bundled or your own files); write labels, summary, plot"

DESCRIPTION = """\
Fit one estimator and write, in --out:
  labels.csv     one cluster per input row, in input order (with the ids of --id-column)
  summary.json   objective, its history, iterations, engine, emission, constraint weight
                 w (auto resolved), timing, parameters, scores, violated constraints, version
  clusters.png   with --plot: a 2-D projection coloured by cluster, violated constraints drawn

Supervision (one of):
  --pairs FILE     your constraints: a table with columns i, j, kind (must or cannot) and
                   optionally weight (a number, inf = hard); i and j are 0-based positions
                   of rows of --data
  --constraints N  N random pairs drawn from the labels (must-link when classes agree)
  --seeds F        a fraction F of the labelled points keep their class, the rest are unknown
  --labels FILE    alone: the labels as given (-1 = unknown)
With a bundled data set and none of them: 100 random pairs (for seeded-kmeans and
constrained-kmeans: 10 % seeds).

Examples:
  hmrf fit --data points.csv --pairs pairs.csv --k 3 --plot
  hmrf fit --data points.csv --labels labels.csv --constraints 200 --engine bp
  hmrf fit --data docs.txt --k 4 --estimator spherical-kmeans
  hmrf fit --dataset wine --estimator seeded-kmeans --seeds 0.2

""" + _image.HELP + "\n" + _cluster.HELP


def add_parser(sub):
    p = common.add_parser(sub, "fit", summary=SUMMARY, description=DESCRIPTION,
                          epilog=common.full_listing)
    common.add_data_options(p, labels_help="class labels of --data, one per row (-1: unknown): "
                                           "seeds or pairs as the estimator takes them, or the source "
                                           "of --constraints/--seeds, "
                                           "and the reference of the scores")
    p.add_argument("--k", type=common.pos_int, metavar="K",
                   help="number of clusters (default: the number of classes in the labels)")
    p.add_argument("--estimator", default="hmrf-kmeans", type=estimator_key, choices=list(ESTIMATORS),
                   metavar="NAME", help="the estimator, listed below (its class name works too)")
    p.add_argument("--emission", metavar="NAME",
                   help=f"emission family, listed below (default: {common.TEXT_EMISSION}; else the "
                        "estimator's own, sqeuclidean for most)")
    common.own_default(p.add_argument("--engine", metavar="NAME",
                                      help="E-step engine, listed below (default: the estimator's "
                                           "own, %(own)s)"), "inference", "takes_engine")
    common.add_w_option(p, also=f"{_image.DEFAULT_W:g} with --image")
    sup = p.add_mutually_exclusive_group()
    sup.add_argument("--pairs", metavar="FILE", help="your constraints (see above)")
    sup.add_argument("--constraints", type=common.nonneg_int, metavar="N",
                     help="number of random pairs drawn from the labels")
    sup.add_argument("--seeds", type=common.fraction, metavar="F",
                     help="fraction of the labelled points given as seeds")
    p.add_argument("--seed", type=common.seed_int, default=0,
                   help="random seed (supervision draws, initialisation)")
    p.add_argument("--plot", action="store_true", help="also write clusters.png")
    _image.add_options(p)
    _cluster.add_options(p)
    common.add_run_options(p, out="results/fit", many_fits=False)
    common.add_plugin_option(p)
    return p


def _supervision(args, spec, y, n, rng):
    """``(supervision, description, points used)`` from the flags (see DESCRIPTION)."""
    import numpy as np

    from ..constraints import Constraints
    from ..datasets import read_pairs

    given = next((f for f, v in (("--pairs", args.pairs), ("--constraints", args.constraints),
                                 ("--seeds", args.seeds)) if v is not None), None)
    if spec.supervision == "none" and given:
        raise ValueError(f"{args.estimator} takes no supervision; drop {given}.")
    if spec.supervision == "labels" and given in ("--pairs", "--constraints"):
        raise ValueError(f"{args.estimator} takes labelled seeds, not pairs: use --seeds F or "
                         "--labels FILE.")
    if given in ("--constraints", "--seeds") and y is None:
        raise ValueError(f"{given} draws from labels: give --labels FILE.")
    known = np.flatnonzero(y >= 0) if y is not None else np.empty(0, dtype=np.int64)
    if given is None and args.data is None:  # a bundled data set: the defaults of DESCRIPTION
        given = {"constraints": "--constraints", "labels": "--seeds", "none": None}[spec.supervision]
        args.constraints, args.seeds = 100, 0.1
    if given == "--pairs":
        c = read_pairs(args.pairs, n)
        return c, f"pairs from {args.pairs}", c.constrained_points
    if given == "--constraints":
        c = Constraints.sample_from_labels(y, args.constraints, rng, among=known)
        return c, "random pairs from the labels", c.constrained_points
    if given == "--seeds":
        seeds = np.sort(rng.choice(known, size=int(round(args.seeds * known.size)), replace=False))
        partial = np.full(n, -1, dtype=np.int64)
        partial[seeds] = y[seeds]
        return partial, f"{seeds.size} seeds ({args.seeds:g} of the labelled points)", seeds
    if y is not None and spec.supervision != "none":
        return y, f"{known.size} labelled points from {args.labels}", known
    return None, "none", np.empty(0, dtype=np.int64)


def _json_safe(value):
    import numpy as np

    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_safe(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else str(float(value))
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return repr(value)


def _family(est) -> str | None:
    """Name of the emission family the estimator fitted with."""
    from ..estimators.base import HMRFClusterMixin
    from ..estimators.supervision import emission_of

    return emission_of(est).name if isinstance(est, HMRFClusterMixin) else None


def _w_text(est, spec) -> str:
    """The constraint weight for the printed summary: ``auto = <value>`` when resolved."""
    if not spec.takes_w:
        return "-"
    given, used = est.get_params(deep=False).get("w"), getattr(est, "w_", None)
    if isinstance(given, str) and used is not None:
        # NaN: the fit had no constraints to weigh
        return f"{given} (no constraints)" if used != used else f"{given} = {used:.6g}"
    return f"{given:g}" if isinstance(given, float) else str(given)


def run(args) -> int:
    import numpy as np

    from .. import __version__
    from ..estimators import fit_supervised, make_estimator
    from ..metrics import evaluate

    if _image.requested(args):
        return _image.run(args)
    if args.plot:  # matplotlib is an extra: its absence stops the command before it fits or writes
        from .._optional import load

        load("matplotlib.pyplot", purpose="hmrf fit --plot")
    if _cluster.requested(args):
        return _cluster.run(args)
    spec = ESTIMATORS[args.estimator]
    data = common.load(args, need_labels=False)
    X, y, n = data.X, data.y, data.X.shape[0]
    k = args.k
    if k is None:
        if y is None or not np.any(y >= 0):
            raise ValueError("--k is needed: there are no labels to count the classes of.")
        k = int(np.unique(y[y >= 0]).size)
    emission = common.emission_for(args.emission, spec, data)
    est = make_estimator(args.estimator, k, emission, args.w, args.engine, random_state=args.seed)
    rng = np.random.default_rng(args.seed)
    supervision, sup_text, used = _supervision(args, spec, y, n, rng)
    with common.OutputDir(args.out) as out:
        t0 = time.perf_counter()
        fit_supervised(est, X, supervision)
        elapsed = time.perf_counter() - t0
        labels = np.asarray(est.labels_, dtype=np.int64)
        c = getattr(est, "constraints_", None)
        violated = c.violations(labels) if c is not None and len(c) else np.zeros(0, dtype=bool)
        must = c.kind[violated] > 0 if c is not None and len(c) else np.zeros(0, dtype=bool)
        scores = {}
        if y is not None and np.any(y >= 0):
            known = y >= 0
            held = known.copy()
            held[used] = False
            scores["all"] = evaluate(y[known], labels[known])
            if held.sum() >= 2:
                scores["unsupervised_points"] = evaluate(y[held], labels[held])
        params = est.get_params(deep=False)
        engine = params.get("inference") if spec.takes_engine else None
        summary = dict(
            hmrf_version=__version__,
            arguments={a: v for a, v in vars(args).items() if not a.startswith("_")},
            data=dict(data.source, name=data.name, n=n, d=int(X.shape[1]),
                      sparse=not isinstance(X, np.ndarray)),
            estimator=args.estimator, engine=engine, parameters=params, n_clusters=k,
            w=getattr(est, "w_", None) if spec.takes_w else None, emission=_family(est),
            supervision=dict(description=sup_text,
                             n_must_link=None if c is None else c.n_must_link,
                             n_cannot_link=None if c is None else c.n_cannot_link),
            violated=dict(must_link=int(must.sum()), cannot_link=int((~must).sum())),
            objective=getattr(est, "objective_", None), history=getattr(est, "history_", None),
            n_iter=getattr(est, "n_iter_", None), converged=getattr(est, "converged_", None),
            fit_time=elapsed, seed=args.seed, scores=scores,
            files=dict(labels=out.file("labels.csv"), summary=out.file("summary.json"),
                       plot=out.file("clusters.png") if args.plot else None))
        id_name = "id" if args.id_column is None or str(args.id_column).isdigit() else args.id_column
        with open(out.file("labels.csv"), "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            if data.ids is None:
                w.writerow(["row", "label"])
                w.writerows(zip(range(n), labels.tolist()))
            else:
                w.writerow(["row", id_name, "label"])
                w.writerows(zip(range(n), data.ids.tolist(), labels.tolist()))
        with open(out.file("summary.json"), "w", encoding="utf-8") as f:
            json.dump(_json_safe(summary), f, indent=2)
            f.write("\n")
        if args.plot:
            from ._plot import plot_clusters

            plot_clusters(X, labels, c, out.file("clusters.png"),
                          f"{data.name}: {args.estimator}, k={k}")
    engine_text = engine if engine is not None else f"fixed ({spec.no_engine})"
    print(f"data         {common.describe(data)}")
    print(f"estimator    {args.estimator}  engine={engine_text}  "
          f"emission={_family(est)}{'' if args.emission else ' (default)'}  w={_w_text(est, spec)}")
    pairs = ("" if c is None or spec.supervision != "constraints" else
             f"{len(c)} ({c.n_must_link} must-link, {c.n_cannot_link} cannot-link): ")
    print(f"supervision  {pairs}{sup_text}")
    if "all" in scores:
        held = scores.get("unsupervised_points", {})
        for key, name in (("nmi", "NMI"), ("pairwise_f", "pairwise F")):
            extra = f"  (points not in the supervision: {held[key]:.4f})" if held else ""
            print(f"{name:<12} {scores['all'][key]:.4f}{extra}")
    print(f"violated     {int(must.sum())} must-link, {int((~must).sum())} cannot-link")
    print(f"objective    {est.objective_:.4f}")
    print(f"iterations   {est.n_iter_}  converged={est.converged_}  time={elapsed:.3f}s")
    written = ["summary.json", *(["clusters.png"] if args.plot else [])]
    print(f"wrote        {out.file('labels.csv')}, " + ", ".join(written))
    return 0

