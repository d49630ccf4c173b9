"""The oracle widget: an `anywidget <https://anywidget.dev>`_ whose browser side is one ES
module (``oracle_widget.js``, plain SVG, no build step)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import anywidget
import numpy as np
import traitlets

from .oracle_model import OracleModel

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from .._typing import MatrixLike
    from ..active.oracles import OracleLike

__all__ = ["OracleWidget"]

_HERE = pathlib.Path(__file__).parent
_ANSWERS = {"must": True, "cannot": False, "unknown": None}


class OracleWidget(anywidget.AnyWidget):
    """Be the oracle: answer queries, add pairs, watch the clustering follow.

    Shows the data in 2-D coloured by the clustering, with the next query circled.
    Answer with the buttons or the keys ``m`` (must-link), ``c`` (cannot-link) and
    ``d`` (don't know); click two points, then ``m`` or ``c``, to add a pair of your own
    (``Esc`` cancels). With true labels ``y`` a learning curve grows beside the plot.

    Parameters are those of :class:`~hmrf.widgets.OracleModel` (``model``), and
    ``width``, ``height``, the size of the scatter plot in pixels.

    Notes
    -----
    Synchronised traits, read by the browser: ``points`` (drawing coordinates),
    ``labels``, ``query`` (``[i, j]`` or empty), ``constraints`` (rows ``[i, j, kind,
    violated]`` with kind +1 / -1), ``curve`` (rows ``[n_answers, nmi, ari]``),
    ``n_answers``, ``status``, ``error``, ``fit_seconds`` and ``version`` (one more
    after every update). The browser sends ``{"type": "answer", "value":
    "must" | "cannot" | "unknown", "query": [i, j]}`` and ``{"type": "pair", "i": i,
    "j": j, "kind": "must" | "cannot"}``; an answer to a query that is no longer pending
    (a double click) is ignored.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from hmrf.widgets import OracleWidget
    >>> X, y = load_iris(return_X_y=True)
    >>> w = OracleWidget(X, y, random_state=0)
    >>> w.query == list(w.model.query)
    True
    >>> w.answer(bool(y[w.query[0]] == y[w.query[1]]))
    >>> w.n_answers, len(w.constraints)
    (1, 1)
    >>> w.close()
    """

    _esm = _HERE / "oracle_widget.js"
    _css = _HERE / "oracle_widget.css"

    points = traitlets.List().tag(sync=True)
    labels = traitlets.List().tag(sync=True)
    query = traitlets.List().tag(sync=True)
    constraints = traitlets.List().tag(sync=True)
    curve = traitlets.List().tag(sync=True)
    n_answers = traitlets.Int(0).tag(sync=True)
    n_clusters = traitlets.Int(0).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    fit_seconds = traitlets.Float(0.0).tag(sync=True)
    version = traitlets.Int(0).tag(sync=True)
    width = traitlets.Int(460).tag(sync=True)
    height = traitlets.Int(380).tag(sync=True)

    def __init__(self, X: MatrixLike, y: ArrayLike | None = None, *, width: int = 460, height: int = 380,
                 **options: Any) -> None:
        model = OracleModel(X, y, **options)
        super().__init__(points=np.round(model.xy, 6).tolist(), n_clusters=model.n_clusters,
                         width=int(width), height=int(height))
        self.model = model
        self.on_msg(self._on_message)
        self._sync()

    # --------------------------------------------------------------- actions
    def answer(self, value: bool | None) -> None:
        """Answer the pending query: True (must-link), False (cannot-link), None (don't know)."""
        self._act(self.model.answer, value)

    def add_pair(self, i: int, j: int, kind: str | bool | int) -> None:
        """Add a pair of one's own, ``kind`` ``"must"`` or ``"cannot"``."""
        self._act(self.model.add_pair, i, j, kind)

    def play(self, oracle: OracleLike, n_answers: int | None = None) -> int:
        """Let ``oracle`` (e.g. a :class:`~hmrf.active.LabelOracle`) answer, redrawing each time."""
        given = 0
        while self.model.query is not None and (n_answers is None or given < n_answers):
            if not self.model.play(oracle, 1):
                break
            given += 1
            self._sync()
        return given

    def plot(self, axes: Axes | Sequence[Axes] | None = None) -> Figure:
        """A matplotlib picture of the current state (:func:`~hmrf.widgets.plot_oracle`)."""
        from .plot import plot_oracle

        return plot_oracle(self.model, axes)

    def close(self) -> None:
        """Stop the selector's thread and close the view."""
        model = getattr(self, "model", None)
        if model is not None:
            model.close()
        super().close()

    def __repr__(self) -> str:
        model = getattr(self, "model", None)
        if model is None:
            return "OracleWidget(closed)"
        return repr(model).replace("OracleModel", "OracleWidget", 1)

    # ------------------------------------------------------------- internals
    def _act(self, action, *args) -> None:
        """Run an action, then mirror the model; an error is shown, then raised."""
        try:
            action(*args)
        except Exception as exc:
            self._sync(error=f"{type(exc).__name__}: {exc}")
            raise
        self._sync()

    def _on_message(self, _widget, content, _buffers) -> None:
        """A click or key press in the browser; every message ends in one update of the
        traits (``version`` + 1), which tells the browser the kernel is ready."""
        try:
            kind = content.get("type") if isinstance(content, dict) else None
            if kind == "answer":
                pending = self.model.query
                if pending is None or list(content.get("query", [])) != list(pending):
                    self._sync(status="That query was already answered.")
                    return
                self.model.answer(_ANSWERS[content["value"]])
            elif kind == "pair":
                self.model.add_pair(int(content["i"]), int(content["j"]), content["kind"])
            else:
                raise ValueError(f"unknown message from the browser: {content!r}")
        except Exception as exc:  # noqa: BLE001 - shown in the widget; the kernel keeps running
            self._sync(error=f"{type(exc).__name__}: {exc}")
        else:
            self._sync()

    def _sync(self, *, status=None, error="") -> None:
        """Copy the model's state into the synchronised traits, in one message."""
        m = self.model
        c = m.constraints
        bad = c.violations(m.labels)
        q = m.query
        if status is None:
            session = m.session
            if q is not None:
                left = "" if session.remaining is None else f" ({session.remaining} left)"
                status = f"Query {len(session.queries) + 1}{left}: same cluster?"
            else:
                status = f"No more queries: {session.stop_reason}. You can still add pairs."
        rows = np.column_stack([c.pairs, c.kind, bad]).astype(int).tolist() if len(c) else []
        curve = [[p.n_answers, p.nmi, p.ari] for p in m.history] if m.y is not None else []
        with self.hold_sync():
            self.labels = m.labels.tolist()
            self.query = [] if q is None else [int(q[0]), int(q[1])]
            self.constraints = rows
            self.curve = curve
            self.n_answers = m.n_answers
            self.fit_seconds = float(m.history[-1].seconds) if m.history else 0.0
            self.status = status
            self.error = error
            self.version = self.version + 1
