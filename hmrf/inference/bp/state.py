"""The state the sequential passes of belief propagation carry between passes.

Both implementations of the passes (:mod:`.sequential_numpy`, the NumPy reference, and
:mod:`.kernels_numba`, its compiled twin) derive from :class:`PassState`: the messages'
layout, TRW-S weights (Kolmogorov 2006, §4-5), lazy-update flags (residual updates,
Elidan, McGraw & Koller 2006) and the components that have finished. The compiled
kernels read the flags as one :class:`PassFlags`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .order import MessageOrder

if TYPE_CHECKING:
    from typing import Any

    from numpy.typing import NDArray

__all__ = ["PassState", "PassFlags"]


class PassFlags(NamedTuple):
    """The lazy-update flags of a :class:`PassState`, as the compiled kernels take them: messages
    never damped; nodes to send in the next forward / backward pass; nodes to decode
    again; nodes whose component has finished."""

    undamped: np.ndarray
    dirty_f: np.ndarray
    dirty_b: np.ndarray
    stale: np.ndarray
    frozen: np.ndarray


class PassState:
    """What both implementations of the passes share: messages of a :class:`MessageOrder`,
    TRW-S weights, lazy-update flags and frozen (finished) components.

    ``dirty[0]`` / ``dirty[1]``: the node sends in the next forward / backward pass;
    ``stale_label``: the node is decoded again in the next forward pass.
    """

    def __init__(self, layout: MessageOrder, n: int, m: int, k: int, tol: float) -> None:
        self.layout = layout
        self.n, self.m, self.k, self.tol = n, m, k, float(tol)
        self.perm, self.comp, self.n_comp = layout.perm, layout.comp, layout.n_comp
        self.gamma_node = np.ones((n, 1))
        self.reweighted = self.all_trw = False
        self.undamped = np.zeros(2 * m, dtype=bool)
        self.trw_node = np.zeros(n, dtype=bool)
        self.dirty = [np.ones(n, dtype=bool), np.ones(n, dtype=bool)]  # forward, backward
        self.frozen = np.zeros(n, dtype=bool)
        self.any_frozen = False
        self.stale_label = np.ones(n, dtype=bool)
        self.node_e = np.zeros(n)

    def flags(self) -> PassFlags:
        """The lazy-update flags as one :class:`PassFlags` (views of this state's arrays)."""
        return PassFlags(self.undamped, self.dirty[0], self.dirty[1], self.stale_label, self.frozen)

    def set_gamma(self, trws_nodes: NDArray[Any]) -> None:
        """TRW-S weights for the senders in ``trws_nodes`` (bool, permuted order), 1 elsewhere."""
        self.gamma_node = np.where(trws_nodes, self.layout.trw_gamma, 1.0)[:, None]
        self.reweighted = bool(np.any(self.gamma_node != 1.0))
        self.trw_node = np.asarray(trws_nodes, dtype=bool)
        self.all_trw = bool(self.trw_node.all())
        self.undamped = self.trw_node[self.layout.src]  # TRW-S updates are never damped

    def wake(self, nodes: NDArray[np.intp]) -> None:
        """Flag ``nodes`` (bool mask, permuted order) that are not frozen to send in both
        passes and to be decoded again (after a change of their weights or messages)."""
        live = nodes & ~self.frozen
        self.dirty[0] |= live
        self.dirty[1] |= live
        self.stale_label |= nodes

    def freeze(self, nodes: NDArray[np.intp]) -> None:
        """Stop updating the messages sent by ``nodes`` (bool mask, permuted order)."""
        self.frozen |= nodes
        self.any_frozen = bool(self.frozen.any())
        self.dirty[0] &= ~nodes
        self.dirty[1] &= ~nodes

    def new_messages(self) -> NDArray[Any]:
        """All-zero messages, shape (2m + 1, k)."""
        return np.zeros((2 * self.m + 1, self.k))

    def zero_messages(self, msgs: NDArray[Any], which: NDArray[Any]) -> None:
        """Set the messages ``which`` (bool mask over the 2m messages) to zero."""
        if which.all():
            msgs.fill(0.0)
        else:
            msgs[:-1][which] = 0.0

    def restore_messages(self, msgs: NDArray[Any], which: NDArray[Any], saved: Any) -> None:
        """Set the messages ``which`` (bool mask over the 2m messages) to those of ``saved``."""
        msgs[:-1][which] = saved[:-1][which]
