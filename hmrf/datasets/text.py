"""Text corpora as sparse vectors: the pre-processing of Basu (2005), §2.5."""

from __future__ import annotations

import numbers
import os
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import NDArray
    from scipy import sparse

__all__ = ["read_orange_tab", "thesis_tfidf", "sample_documents"]


def read_orange_tab(path: str | os.PathLike[str]) -> tuple[np.ndarray, list[str]]:
    """Class labels and texts of a corpus in Orange's tab-delimited format.

    Three header lines (names, types, flags), then one row per document: the class is
    the column flagged ``class``, the text the first ``string`` column.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    labels : ndarray of str, shape (n,)
    texts : list of str, length n

    Raises
    ------
    ValueError
        If the header has no class column or no string column, or a row has the wrong
        number of fields (the message names the file and line).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "c.tab")
    >>> _ = open(p, "w").write("Category\\tText\\nd\\tstring\\nclass\\t\\n\\na\\tsome text\\n")
    >>> read_orange_tab(p)
    (array(['a'], dtype='<U1'), ['some text'])
    """
    path = os.fspath(path)
    labels, texts = [], []
    with open(path, encoding="utf-8") as f:
        header = [f.readline().rstrip("\r\n").split("\t") for _ in range(3)]
        names, types, flags = header
        ncol = len(names)
        flags = flags + [""] * (ncol - len(flags))
        types = types + [""] * (ncol - len(types))
        try:
            ci = flags.index("class")
        except ValueError:
            raise ValueError(f"{path}: no column is flagged 'class' in the third header "
                             "line.") from None
        try:
            ti = types.index("string")
        except ValueError:
            raise ValueError(f"{path}: no column has type 'string' in the second header "
                             "line.") from None
        for lineno, line in enumerate(f, start=4):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != ncol:
                raise ValueError(f"{path}, line {lineno}: {len(fields)} fields, expected {ncol}.")
            labels.append(fields[ci])
            texts.append(fields[ti])
    return np.asarray(labels), texts


def thesis_tfidf(documents: Sequence[str], *, min_df: int = 5, max_df: float = 0.95,
                 stop_words: str = "english") -> tuple[sparse.csr_matrix, NDArray[np.str_]]:
    """TF-IDF vectors of Basu (2005), §2.5, as a sparse CSR matrix with unit L2 rows.

    Parameters
    ----------
    documents : sequence of str
    min_df : int, default=5
        Terms in fewer than ``min_df`` documents are removed.
    max_df : float, default=0.95
        Terms in more than this fraction of the documents are removed.
    stop_words : "english", list of str or None, default="english"
        Stop words removed before counting (``"english"``: scikit-learn's list).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_terms), float64
        Row ``j`` is ``w_·j / ||w_·j||_2`` (a document whose terms were all removed is
        a zero row).
    terms : ndarray of str, shape (n_terms,)

    Notes
    -----
    With ``f_ij`` the count of term ``i`` in document ``j``, ``N`` documents and
    ``df_i`` the number of documents containing term ``i``, the weight is

        w_ij = f_ij · log2(N / df_i)                               (thesis §2.5)

    Terms with ``df_i < min_df`` or ``df_i > max_df · N`` are removed and every vector
    scaled to unit L2 norm. Counts come from scikit-learn's ``CountVectorizer``; its
    ``TfidfTransformer`` is not used, its IDF being ``ln(N / df) + 1``. The thesis's stop
    list (MC toolkit) is not available; scikit-learn's English list is used.

    References
    ----------
    Basu (2005), §2.5; Dhillon, Fan & Guan (2001) for the frequency cut-offs.

    Examples
    --------
    >>> docs = ["apple banana", "apple cherry", "banana cherry", "apple apple"]
    >>> X, terms = thesis_tfidf(docs, min_df=1, max_df=1.0, stop_words=None)
    >>> terms.tolist()
    ['apple', 'banana', 'cherry']
    >>> X.shape, bool(abs(X.multiply(X).sum(axis=1) - 1).max() < 1e-12)
    ((4, 3), True)
    """
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    docs = list(documents)
    if not docs:
        raise ValueError("documents is empty.")
    if not all(isinstance(d, str) for d in docs):
        raise TypeError("documents must be strings.")
    if isinstance(min_df, bool) or not isinstance(min_df, numbers.Integral) or min_df < 1:
        raise ValueError(f"min_df must be an integer >= 1 (a number of documents); got {min_df!r}.")
    if isinstance(max_df, bool) or not isinstance(max_df, numbers.Real) or not 0.0 < max_df <= 1.0:
        raise ValueError(f"max_df must be a fraction in (0, 1]; got {max_df!r}.")
    n = len(docs)
    cv = CountVectorizer(stop_words=stop_words, min_df=int(min_df), max_df=float(max_df),
                         dtype=np.float64)
    try:
        counts = cv.fit_transform(docs).tocsr()
    except ValueError as exc:  # sklearn: "After pruning, no terms remain..."
        raise ValueError(f"no term survives the document-frequency cut-offs: {exc}") from None
    df = np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.float64)
    idf = np.log2(n / df)
    X = counts @ sp.diags(idf)
    X = normalize(sp.csr_matrix(X), norm="l2", axis=1, copy=False)
    X.eliminate_zeros()
    X.sort_indices()
    return X, cv.get_feature_names_out()


def sample_documents(labels: NDArray[np.str_], texts: Sequence[str], classes: Sequence[str],
                     per_class: int | None, rng: np.random.Generator, *, max_rounds: int = 50,
                     **tfidf_args: Any) -> tuple[sparse.csr_matrix, NDArray[np.int64], NDArray[np.int64]]:
    """Draw ``per_class`` documents of each class and vectorise them (thesis §2.5).

    Documents are drawn without replacement; one whose TF-IDF vector is empty is
    replaced by another of its class and the collection vectorised again.

    Parameters
    ----------
    labels : ndarray of str (N,)
    texts : sequence of str (N,)
    classes : sequence of str
        Classes to draw from; class ``c`` of the result is ``classes[c]``.
    per_class : int or None
        Documents per class (``None``: all documents of the class).
    rng : numpy Generator
    max_rounds : int, default=50
    **tfidf_args
        Passed to :func:`thesis_tfidf`.

    Returns
    -------
    X : csr_matrix (n, d)
    y : ndarray of int64 (n,)
        Index into ``classes``; documents are ordered by class.
    chosen : ndarray of int64 (n,)
        Row of each document in ``labels`` / ``texts``.
    """
    labels = np.asarray(labels)
    pools, chosen = [], []
    for c in classes:
        pool = np.flatnonzero(labels == c)
        if pool.size == 0:
            raise ValueError(f"class {c!r} has no documents.")
        m = pool.size if per_class is None else int(per_class)
        if m > pool.size:
            raise ValueError(f"class {c!r} has {pool.size} documents; {m} requested.")
        perm = rng.permutation(pool)
        chosen.append(perm[:m])
        pools.append(list(perm[m:]))
    y = np.repeat(np.arange(len(classes)), [c.size for c in chosen])
    idx = np.concatenate(chosen)
    for _ in range(max_rounds):
        X, _terms = thesis_tfidf([texts[i] for i in idx], **tfidf_args)
        empty = np.flatnonzero(np.diff(X.indptr) == 0)
        if empty.size == 0:
            return X, y.astype(np.int64), idx.astype(np.int64)
        for r in empty:
            pool = pools[y[r]]
            if not pool:
                raise ValueError(f"class {classes[y[r]]!r} ran out of non-empty documents.")
            idx[r] = pool.pop(0)
    raise ValueError(f"documents with empty vectors remain after {max_rounds} redraws.")
