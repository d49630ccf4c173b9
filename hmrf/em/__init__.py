"""EM for the HMRF (ARCHITECTURE.md, layer 6): the loops and the pass over the data they share.

* :mod:`hmrf.em.loop` — hard EM, HMRF-KMeans (Basu 2005, §4.4.2, Fig. 4.3):
  :func:`run_em`, MAP labels from any inference engine, empty clusters re-seeded;
* :mod:`hmrf.em.soft` — soft (variational) EM: :func:`run_soft_em`, posteriors and the
  free energy;
* :mod:`hmrf.em.passes` — one pass over the data in row blocks per iteration: the
  E-step of the unconstrained points, the cost rows of the constrained ones and the
  M-step statistics (:func:`~hmrf.em.passes.assignment_pass`,
  :func:`~hmrf.em.passes.soft_pass`); ``passes_numba`` holds its compiled row reduction.

To change what an iteration does, read :mod:`hmrf.em.loop`; to change how the data are
read (blocks, threads, a Dask cluster), :mod:`hmrf.em.passes` and
:mod:`hmrf.distributed`.
"""

from .loop import EMResult, rise_tolerance, run_em
from .soft import posterior_engine, run_soft_em

__all__ = ["EMResult", "run_em", "rise_tolerance", "run_soft_em", "posterior_engine"]
