"""Itakura-Saito divergence: the emission of exponential (power-spectrum) data."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .bregman import BregmanFamily

if TYPE_CHECKING:

    from numpy.typing import NDArray

    from .._typing import MatrixLike

__all__ = ["ItakuraSaito"]


def _neg_log_sum(A):
    return -np.log(A).sum(axis=1)


def _neg_reciprocal(M):
    return -1.0 / M


class ItakuraSaito(BregmanFamily):
    """Itakura-Saito divergence ``D(x, μ) = Σ_f x_f/μ_f - log(x_f/μ_f) - 1``.

    The Bregman divergence of ``φ(x) = -Σ log x_f`` (Banerjee et al. 2005, Table 1),
    so unary costs are one product ``X @ (1/M)^T`` and the M-step is the mean. Data
    must be strictly positive; sparse matrices (implicit zeros) are rejected.
    """

    accepts_sparse = False

    def __init__(self) -> None:
        super().__init__(_neg_log_sum, _neg_reciprocal, name="itakura_saito")

    def __repr__(self) -> str:
        return "ItakuraSaito()"

    def prepare(self, X: MatrixLike) -> NDArray[np.floating]:
        if sp.issparse(X):
            raise TypeError(
                "the Itakura-Saito emission needs strictly positive data; a sparse matrix "
                "has implicit zeros. Pass a dense array."
            )
        if X.size and X.min() <= 0:
            r, c = (int(t) for t in np.argwhere(X <= 0)[0])
            raise ValueError(
                f"the Itakura-Saito emission needs strictly positive data; X[{r}, {c}] = {X[r, c]}."
            )
        return X
