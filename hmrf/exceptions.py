"""Exceptions and warnings of :mod:`hmrf`.

Every error names what is wrong and where (the offending pair, point or array),
so that a user never has to read a NumPy traceback to find the problem.
"""

from __future__ import annotations

__all__ = [
    "InconsistentConstraintsError",
    "InfeasibleError",
    "ConstraintSearchError",
    "ConvergenceWarning",
    "ConstraintConflictWarning",
]


class InconsistentConstraintsError(ValueError):
    """Hard constraints contradict each other.

    Raised when a hard cannot-link joins two points that hard must-links (directly
    or through their transitive closure) force into the same cluster.

    Parameters
    ----------
    message : str
        Human-readable description naming the pair.
    pair : tuple of int, optional
        The cannot-link pair ``(i, j)`` that contradicts the must-links.
    path : tuple of int, optional
        A chain of hard must-links ``(i, ..., j)`` connecting the two points.
    """

    def __init__(self, message: str, pair: tuple[int, int] | None = None,
                 path: tuple[int, ...] | None = None) -> None:
        super().__init__(message)
        self.pair = pair
        self.path = path


class InfeasibleError(ValueError):
    """No labelling that keeps every hard constraint was found: proved impossible (more
    mutually cannot-linked groups than clusters; ``ExactMILP``; the LP relaxation without
    a solution; ``HAC``, also when ``n_clusters`` is above the number of must-link groups),
    or not found by a heuristic (COP-KMeans' greedy assignment, ICM, BP, LP rounding),
    whose message says the constraints may still be satisfiable.

    Parameters
    ----------
    message : str
        Human-readable description.
    point : int, optional
        Index of the point that could not be placed.
    """

    def __init__(self, message: str, point: int | None = None) -> None:
        super().__init__(message)
        self.point = point


class ConstraintSearchError(RuntimeError):
    """A search for a labelling that keeps every hard constraint stopped (at its time
    limit) without finding one and without proving that there is none: unlike
    :class:`InfeasibleError`, the constraints may well be satisfiable. The message says
    what to change (a longer time limit, fewer hard constraints, more clusters)."""


class ConvergenceWarning(UserWarning):
    """An iterative method stopped at its iteration cap before converging.

    Exported for warning filters; :mod:`hmrf`'s own fits do not emit it: a fit that
    stopped at ``max_iter`` has ``n_iter_ == max_iter`` and ``converged_`` False."""


class ConstraintConflictWarning(UserWarning):
    """Contradictory constraints were found and handled by the ``conflicts`` policy."""
