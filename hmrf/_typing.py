"""Type aliases of the public signatures (PEP 484), named after what they accept.

Annotations only: the package's modules import these names under
``typing.TYPE_CHECKING``, so nothing here runs when ``hmrf`` is imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

__all__ = ["MatrixLike", "PairsLike", "RandomLike"]

#: data ``X``: anything :func:`numpy.asarray` takes, or a SciPy sparse matrix / array
MatrixLike = ArrayLike | sparse.spmatrix | sparse.sparray

#: a list of constraint pairs: ``(i, j)`` or ``(i, j, weight)`` rows, an array of shape
#: ``(m, 2)`` or ``(m, 3)``
PairsLike = ArrayLike | Iterable[Sequence[float]]

#: a seed, a NumPy ``Generator`` / ``RandomState``, or ``None`` (fresh entropy), as
#: scikit-learn's ``random_state``
RandomLike = int | np.random.Generator | np.random.RandomState | None
