"""Belief propagation and TRW-S.

* :mod:`.engine`: :class:`BeliefPropagation`, its parameters and their resolved settings;
* :mod:`.schedules`: what runs where (TRW-S on must-link components, the sequential or
  flooding schedule on the others) and the two schedules;
* :mod:`.trws`: :class:`TRWS` (Kolmogorov 2006), its driver and the chain layout every
  pass walks;
* :mod:`.kernels`: the compiled passes and message formulas (their NumPy oracles are in
  ``tests/oracles``).
"""

from .engine import BeliefPropagation
from .schedules import uniform_edge_appearance
from .trws import TRWS

__all__ = ["BeliefPropagation", "TRWS", "uniform_edge_appearance"]
