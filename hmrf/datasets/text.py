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
    """Class labels (ndarray of str) and texts (list) of a corpus in Orange's
    tab-delimited format: three header lines (names, types, flags), then one row per
    document; the class is the column flagged ``class``, the text the first ``string``
    column. A ``ValueError`` names the file and line of a malformed header or row.

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

    With ``f_ij`` the count of term ``i`` in document ``j``, ``N`` documents and
    ``df_i`` the number of documents containing term ``i``, the weight is
    ``w_ij = f_ij · log2(N / df_i)`` (thesis §2.5); terms with ``df_i < min_df`` or
    ``df_i > max_df · N`` are removed and every row scaled to unit L2 norm (a document
    whose terms were all removed is a zero row). scikit-learn's ``TfidfTransformer`` is
    not used (its IDF is ``ln(N / df) + 1``), nor the thesis's MC-toolkit stop list:
    ``stop_words="english"`` is scikit-learn's. Returns ``(X, terms)``. Basu (2005),
    §2.5; Dhillon, Fan & Guan (2001) for the frequency cut-offs.

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
    """Draw ``per_class`` documents (``None``: all) of each of ``classes`` without
    replacement and vectorise them by :func:`thesis_tfidf` (thesis §2.5); a document
    whose vector is empty is replaced by another of its class, up to ``max_rounds``
    times.

    Returns ``(X, y, chosen)``: ``y`` the index into ``classes`` (documents ordered by
    class), ``chosen`` the row of each document in ``labels`` / ``texts``.
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
