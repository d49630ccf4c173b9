"""``hmrf fit --image``: segment a photograph with an HMRF on its pixel grid.

The pixels are the points (:func:`hmrf.datasets.image_pixels`: colours scaled to
``[0, 1]``), the supervision is the pixel grid (:meth:`hmrf.Constraints.grid`: a soft
must-link between neighbouring pixels, weight ``w``), and the fit writes the segmented
image, the labels and a summary. The options and outputs are described in
:data:`HELP` (part of ``hmrf fit --help``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from . import _common as common

#: ``λ``, the weight of a label change between two neighbouring pixels, when ``--w`` is
#: not given: in the units of squared colour distances with colours in [0, 1]
#: (docs/segmentation.md shows its effect).
DEFAULT_W = 0.05
#: The E-step engine when ``--engine`` is not given: on a pixel grid every point is
#: constrained and α-expansion's moves find lower energies than ICM's (docs/segmentation.md).
DEFAULT_ENGINE = "auto"

HELP = f"""\
Images (--image FILE, with --k):
  the pixels are the points (colours scaled to [0, 1]) and neighbouring pixels are
  must-linked with weight --w (default {DEFAULT_W:g}; diagonal neighbours 1/sqrt(2) of it, and with
  --contrast less across colour edges); the engine defaults to {DEFAULT_ENGINE}; writes, in --out:
    segmented.png  each pixel the colour of its cluster's centre
    labels.npy     the cluster of every pixel, an (height, width) integer array
    summary.json   objective, history, iterations, engine, timing, parameters, centres
  hmrf fit --image photo.jpg --k 8 --engine auto --w 0.1 --contrast"""

#: Options of ``hmrf fit`` that describe tabular data or its supervision: not for images.
_NOT_WITH_IMAGE = (("dataset", "--dataset"), ("data", "--data"), ("labels", "--labels"),
                   ("id_column", "--id-column"), ("pairs", "--pairs"), ("constraints", "--constraints"),
                   ("seeds", "--seeds"))


def add_options(p) -> None:
    """``--image``, ``--connectivity`` and ``--contrast`` on the ``hmrf fit`` parser."""
    g = p.add_argument_group("images (see 'Images' above)")
    g.add_argument("--image", metavar="FILE",
                   help="segment this image (PNG, JPEG, TIFF, ...; needs Pillow, which comes with "
                        "matplotlib) instead of clustering --data or --dataset")
    g.add_argument("--connectivity", type=int, choices=(4, 8),
                   help="with --image: each pixel's neighbours, 4 (left, right, up, down) or 8 (and "
                        "the diagonals); default 4")
    g.add_argument("--contrast", action=argparse.BooleanOptionalAction,
                   help="with --image: contrast-sensitive weights, w exp(-beta |I_p - I_q|^2) "
                        "(GrabCut's beta); default off")


def requested(args) -> bool:
    """Whether ``hmrf fit`` segments an image (``--image``); the image options without
    ``--image`` are an error."""
    if args.image is not None:
        return True
    for name, flag in (("connectivity", "--connectivity"), ("contrast", "--contrast")):
        if getattr(args, name) is not None:
            raise ValueError(f"{flag} goes with --image.")
    return False


def _check_options(args) -> None:
    """Refuse the options of tabular data and their supervision."""
    for name, flag in _NOT_WITH_IMAGE:
        if getattr(args, name, None) is not None:
            raise ValueError(f"--image takes no {flag}: the pixels are the points and the pixel "
                             "grid is the supervision.")
    if args.standardize:
        raise ValueError("--image takes no --standardize: colours are scaled to [0, 1].")
    if args.plot:
        raise ValueError("--image writes segmented.png; drop --plot.")
    if args.k is None:
        raise ValueError("--image needs --k, the number of segments (colours).")


def _estimator(args):
    from ..estimators import ESTIMATORS, make_estimator

    spec = ESTIMATORS[args.estimator]
    if spec.supervision != "constraints":
        usable = ", ".join(n for n, s in ESTIMATORS.items() if s.supervision == "constraints")
        raise ValueError(f"{args.estimator} takes no pairwise constraints, so it cannot use the pixel "
                         f"grid; use one of {usable}.")
    w = args.w if args.w is not None else (DEFAULT_W if spec.takes_w else None)
    engine = args.engine if args.engine is not None else (DEFAULT_ENGINE if spec.takes_engine else None)
    est = make_estimator(args.estimator, args.k, args.emission, w, engine, random_state=args.seed)
    if est.get_params().get("closure"):
        raise ValueError(f"{args.estimator} adds the transitive closure of the constraints, which "
                         "on a pixel grid must-links every pair of pixels; use hmrf-kmeans.")
    return spec, est


def run(args) -> int:
    """Segment ``args.image`` (see :data:`HELP`); returns the exit code."""
    import numpy as np

    from .. import __version__
    from ..constraints import Constraints
    from ..datasets.images import image_pixels, label_image, read_image, segmented_image, write_image
    from .fit import _json_safe

    _check_options(args)
    connectivity, contrast = args.connectivity or 4, bool(args.contrast)
    spec, est = _estimator(args)
    image = read_image(args.image)
    h, w = image.shape[:2]
    X = image_pixels(image)
    if args.k > X.shape[0]:
        raise ValueError(f"--k {args.k} is more than the {X.shape[0]} pixels of {args.image}.")
    grid = Constraints.grid((h, w), connectivity, image=X.reshape(h, w, -1) if contrast else None)
    with common.OutputDir(args.out) as out:
        t0 = time.perf_counter()
        est.fit(X, constraints=grid)
        elapsed = time.perf_counter() - t0
        labels = np.asarray(est.labels_, dtype=np.int64)
        boundary = int(grid.violations(labels).sum())
        params = est.get_params(deep=False)
        engine = params.get("inference") if spec.takes_engine else None
        files = dict(segmented=out.file("segmented.png"), labels=out.file("labels.npy"),
                     summary=out.file("summary.json"))
        summary = dict(
            hmrf_version=__version__,
            arguments={a: v for a, v in vars(args).items() if not a.startswith("_")},
            image=dict(path=os.path.abspath(args.image), height=h, width=w, channels=int(X.shape[1]),
                       dtype=str(image.dtype)),
            estimator=args.estimator, engine=engine, parameters=params, n_clusters=args.k,
            grid=dict(connectivity=connectivity, contrast=contrast,
                      n_edges=len(grid), w=getattr(est, "w_", params.get("w"))),
            boundary_edges=boundary,
            objective=est.objective_, history=est.history_, n_iter=est.n_iter_,
            converged=est.converged_, fit_time=elapsed, seed=args.seed,
            cluster_sizes=np.bincount(labels, minlength=args.k),
            cluster_centers=est.cluster_centers_, files=files)
        write_image(files["segmented"], segmented_image(labels, est.cluster_centers_, (h, w)))
        np.save(files["labels"], label_image(labels, (h, w)))
        with open(files["summary"], "w", encoding="utf-8") as f:
            json.dump(_json_safe(summary), f, indent=2)
            f.write("\n")
    print(f"image        {os.path.basename(args.image)} ({h} x {w} pixels, {X.shape[1]} channel(s))")
    print(f"estimator    {args.estimator}  engine={engine}  w={getattr(est, 'w_', params.get('w', '-'))}  "
          f"k={args.k}")
    print(f"grid         {len(grid)} edges ({connectivity}-connected"
          f"{', contrast-sensitive' if contrast else ''}); {boundary} cross a segment boundary")
    print(f"objective    {est.objective_:.4f}")
    print(f"iterations   {est.n_iter_}  converged={est.converged_}  time={elapsed:.3f}s")
    print(f"wrote        {files['segmented']}, labels.npy, summary.json")
    return 0
