"""Active acquisition of pairwise constraints (ARCHITECTURE.md, layer 9; Basu 2005, ch. 5).

Oracles answer "same cluster?" queries under a budget and log them; selectors choose
which pairs to ask and return the answers as :class:`~hmrf.Constraints`:

* :class:`RandomPairs` — random unasked, unimplied pairs (the baseline);
* :class:`Explore` — farthest-first traversal to one neighbourhood per cluster
  (Basu 2005, Fig. 5.1);
* :class:`ExploreConsolidate` — then random points placed with at most k-1 queries
  (Fig. 5.2);
* :class:`MinMax` — then the point least similar to the skeleton (Mallapragada et al.
  2008);
* :class:`NPU` — iterative, random-forest uncertainty per expected query (Xiong,
  Azimi & Fern 2014);
* :class:`COBRAS` — super-instances refined by k-means splits and merged by queries
  (Van Craenendonck et al. 2018); also a clusterer, whose ``labels_`` need no
  other estimator.

:func:`hmrf.experiments.active_curve` runs a selector and a clusterer over budgets and
repetitions.

Examples
--------
>>> import numpy as np
>>> from hmrf.active import ExploreConsolidate, LabelOracle
>>> X = np.array([[0.0], [0.1], [5.0], [5.1], [10.0], [10.1]])
>>> y = np.array([0, 0, 1, 1, 2, 2])
>>> sel = ExploreConsolidate(n_clusters=3, random_state=0).fit(X, LabelOracle(y, budget=6))
>>> sel.n_queries_ <= 6 and all(y[i] == y[j] for i, j in sel.constraints_.must_link)
True
"""

from .base import ActiveSelector, fit_clusterer, neighborhoods_from_constraints
from .cobras import COBRAS
from .explore import Explore, ExploreConsolidate
from .interactive import InteractiveSession
from .minmax import MinMax
from .npu import NPU, normalized_uncertainty
from .oracles import BudgetExhausted, LabelOracle, Oracle, OracleLike, Query, TerminalOracle
from .random_pairs import RandomPairs

__all__ = [
    "Oracle",
    "OracleLike",
    "LabelOracle",
    "TerminalOracle",
    "Query",
    "BudgetExhausted",
    "ActiveSelector",
    "RandomPairs",
    "Explore",
    "ExploreConsolidate",
    "MinMax",
    "NPU",
    "COBRAS",
    "normalized_uncertainty",
    "neighborhoods_from_constraints",
    "fit_clusterer",
    "InteractiveSession",
]
