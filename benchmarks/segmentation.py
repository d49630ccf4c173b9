"""HMRF segmentation of a photograph with every E-step engine, at full resolution: final
objective and time per engine.

scikit-learn's bundled ``flower.jpg`` (427 x 640 pixels, 273,280 points, 545,493 grid
edges with 4-connectivity): the pixels' colours scaled to [0, 1] are the points, the
pixel grid is the supervision (:meth:`hmrf.Constraints.grid`, weight ``w`` per edge),
``k`` clusters, squared Euclidean emission. Every engine starts EM from the same
centres (k-means++ on the pixels, one seed) and runs to convergence; the table gives
the final objective ``J`` (Basu 2005, eq. 4.10), its excess over the lowest ``J`` of the
table, EM iterations, the fit time, the time spent in E-steps, the segments used and the
process's peak memory. A first row gives the unconstrained KMeans labelling from the
same centres, scored by the same objective.

Each engine runs in its own process (its peak memory is its own; nothing is cached
between engines), one after the other; times on a shared machine are noisy, so run it
on an otherwise idle machine.

Run from the repository root::

    python benchmarks/segmentation.py                     # writes docs/results/segmentation.md
    python benchmarks/segmentation.py --scale 4 --no-write  # a quick look at 107 x 160
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import ROOT, markdown_table, write_result  # noqa: E402

DEFAULT_ENGINES = ["icm", "bp", "trws", "expansion", "auto"]


def photograph(scale: int):
    from sklearn.datasets import load_sample_image

    return load_sample_image("flower.jpg")[::scale, ::scale]


def problem(args):
    """Pixels, grid and the shared initial centres."""
    from hmrf import Constraints
    from hmrf.datasets import image_pixels
    from hmrf.emissions import get_emission
    from hmrf.initialization import initial_centers

    image = photograph(args.scale)
    X = image_pixels(image)
    grid = Constraints.grid(image.shape[:2], args.connectivity, image=image if args.contrast else None)
    C0 = initial_centers(X, args.k, get_emission("sqeuclidean"), None, "k-means++",
                         np.random.default_rng(args.seed))
    return image, X, grid, C0


def run_one(args, engine: str, out: str) -> None:
    """One engine (or ``kmeans``) in this process; a JSON line on stdout."""
    from hmrf import HMRF, HMRFKMeans, KMeans

    image, X, grid, C0 = problem(args)
    t0 = time.perf_counter()
    if engine == "kmeans":
        est = KMeans(args.k, init=C0, random_state=0).fit(X)
        e_time = float("nan")
    else:
        est = HMRFKMeans(args.k, inference=engine, w=args.w, init=C0, max_iter=args.max_iter,
                         random_state=0).fit(X, constraints=grid)
        e_time = float(sum(t["e_time"] for t in est.em_result_.trace))
    elapsed = time.perf_counter() - t0
    model = HMRF(X, args.k, constraints=grid, w=args.w)
    objective = model.energy(est.labels_, est.params_)  # every row scored by the same J
    np.save(out, est.labels_.astype(np.int16))
    np.save(out.replace(".npy", "_centers.npy"), est.cluster_centers_)
    print(json.dumps(dict(engine=engine, objective=objective, n_iter=int(est.n_iter_),
                          converged=bool(est.converged_), time=elapsed, e_time=e_time,
                          segments=int(np.unique(est.labels_).size),
                          peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))


def figure(image, rows, labels_dir, path):
    """The photograph and each engine's segmentation, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hmrf.datasets import segmented_image

    panels = [("photograph", image)]
    for r in rows:
        lab = np.load(os.path.join(labels_dir, f"{r['engine']}.npy")).astype(np.int64)
        C = np.load(os.path.join(labels_dir, f"{r['engine']}_centers.npy"))
        name = "KMeans, no grid" if r["engine"] == "kmeans" else r["engine"]
        panels.append((f"{name}  J={r['objective']:.1f}", segmented_image(lab, C, image.shape[:2])))
    cols = 4
    nrow = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrow, cols, figsize=(4.2 * cols, 3.0 * nrow))
    for ax in np.ravel(axes):
        ax.axis("off")
    for ax, (title, im) in zip(np.ravel(axes), panels):
        ax.imshow(np.clip(im, 0, 255 if im.dtype == np.uint8 else 1))
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engines", default=None,
                   help="comma-separated engine names (default: icm, bp, trws, expansion, auto)")
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--w", type=float, default=0.05, help="weight of a grid edge (lambda)")
    p.add_argument("--scale", type=int, default=1, help="keep every SCALE-th pixel per axis (1: full size)")
    p.add_argument("--connectivity", type=int, choices=(4, 8), default=4)
    p.add_argument("--contrast", action="store_true", help="contrast-sensitive weights")
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--labels-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return run_one(args, args.one, args.labels_out)

    engines = args.engines.split(",") if args.engines else DEFAULT_ENGINES
    rows, load = [], [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for engine in ["kmeans", *engines]:  # one process per engine, one after the other
            cmd = [sys.executable, os.path.abspath(__file__), "--one", engine,
                   "--labels-out", os.path.join(tmp, f"{engine}.npy")]
            cmd += [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--no-write"]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if proc.returncode:
                sys.exit(f"{engine} failed:\n{proc.stderr[-3000:]}")
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            load.append(os.getloadavg()[0])
            print(rows[-1], flush=True)
        best = min(r["objective"] for r in rows)
        image = photograph(args.scale)
        h, w = image.shape[:2]
        table = markdown_table(
            ["engine", "objective J", "excess over best", "EM iterations", "fit time (s)",
             "E-step time (s)", "segments", "peak memory (MB)"],
            [[("KMeans, no grid" if r["engine"] == "kmeans" else f"`{r['engine']}`"),
              f"{r['objective']:.2f}", f"{100 * (r['objective'] - best) / best:+.2f} %",
              f"{r['n_iter']}" + ("" if r["converged"] else " (cap)"), f"{r['time']:.1f}",
              "-" if r["engine"] == "kmeans" else f"{r['e_time']:.1f}", r["segments"],
              f"{r['peak_mb']:.0f}"] for r in rows])
        notes = (f"`flower.jpg` at {h} x {w} pixels ({h * w:,} points, {args.connectivity}-connected "
                 f"grid, {'contrast-sensitive' if args.contrast else 'uniform'} weights, "
                 f"{len(__import__('hmrf').Constraints.grid((h, w), args.connectivity)):,} edges), "
                 f"k = {args.k}, w = {args.w:g}, all engines from the same k-means++ centres (seed "
                 f"{args.seed}); J of every row by the same objective, the KMeans row scoring its "
                 "labels and centres with the grid's must-links. Load average of the machine "
                 f"(1 minute, sampled between engines): {min(load):.1f} to {max(load):.1f} on "
                 f"{os.cpu_count()} cores; times above 1 per core are slowed by other work.")
        print(table)
        print(notes)
        if not args.no_write:
            write_result("segmentation", table, notes=notes)
            figure(image, rows, tmp, os.path.join(ROOT, "docs", "_static", "segmentation-flower.png"))


if __name__ == "__main__":
    main()
