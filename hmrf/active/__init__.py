"""Active acquisition of pairwise constraints (Basu 2005, ch. 5).

Oracles answer "same cluster?" queries under a budget; selectors choose the pairs to
ask and return the answers as :class:`~hmrf.Constraints`: :class:`RandomPairs`,
:class:`Explore` and :class:`ExploreConsolidate` (Basu 2005, Figs. 5.1–5.2),
:class:`MinMax` (Mallapragada et al. 2008), :class:`NPU` (Xiong, Azimi & Fern 2014) and
:class:`COBRAS` (Van Craenendonck et al. 2018, also a clusterer).
:func:`hmrf.experiments.active_curve` runs a selector and a clusterer over budgets.

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

from .base import ActiveSelector, fit_clusterer, neighborhoods_from_constraints, takes_centres
from .cobras import COBRAS
from .explore import Explore, ExploreConsolidate
from .interactive import InteractiveSession
from .minmax import MinMax
from .npu import NPU, normalized_uncertainty
from .oracles import BudgetExhausted, LabelOracle, Oracle, OracleLike, Query, TerminalOracle
from .random_pairs import RandomPairs

__all__ = ["Oracle", "OracleLike", "LabelOracle", "TerminalOracle", "Query", "BudgetExhausted",
           "ActiveSelector", "RandomPairs", "Explore", "ExploreConsolidate", "MinMax", "NPU", "COBRAS",
           "normalized_uncertainty", "neighborhoods_from_constraints", "fit_clusterer", "takes_centres",
           "InteractiveSession"]
