"""Belief propagation, one concept per module.

To change ... read:

* the engine, its parameters and how it combines its runs — :mod:`.engine`
  (:class:`BeliefPropagation`) and :mod:`.settings` (:class:`BPSettings`: allowed values
  and the rules between parameters);
* a message formula (must-link, cannot-link, table; max- or sum-product; ``BIG`` for
  infinite costs) — :mod:`.messages`, then the same formula in :mod:`.kernels_numba`;
* when a component switches to TRW-S, stops or is damped — :mod:`.schedules` (one
  driver per schedule, for both implementations of the passes);
* the node order of the sequential passes and the directed-message layout —
  :mod:`.order`;
* sequential tree-reweighted message passing as an engine of its own (:class:`TRWS`,
  ``inference="trws"``): :mod:`.trws` (the engine and its stopping rule), its passes in
  :mod:`.trws_numpy` and, compiled, :mod:`.trws_numba` (``tests/test_trws.py`` checks
  that both compute the same thing);
* the passes themselves — :mod:`.sequential_numpy` and :mod:`.flooding_numpy` (the NumPy
  reference, and the only sum-product passes) and their compiled twins in
  :mod:`.kernels_numba` (numba, optional); ``tests/test_bp_compiled.py`` checks that
  both compute the same thing;
* the state the sequential passes of both twins carry (messages' layout, TRW-S weights,
  lazy-update flags) — :mod:`.state`.
"""

from .engine import BeliefPropagation
from .flooding_numpy import uniform_edge_appearance
from .settings import BPSettings
from .trws import TRWS

__all__ = ["BeliefPropagation", "BPSettings", "TRWS", "uniform_edge_appearance"]
