"""Facts about the code, written into the pages from the code at build time.

A page never types a default, an engine's parameters or a command's flag by hand: it
asks this extension, which reads them where the library keeps them, so a page cannot
state a default the code does not have.

Directives (MyST: ```` ```{hmrf-defaults} estimators ```` ... ```` ``` ````):

``hmrf-defaults estimators``
    every public estimator of :mod:`hmrf` (the classes of ``hmrf.__all__`` with
    ``get_params``) and the default of each constructor parameter, from its signature;
``hmrf-defaults engines``
    every name of :data:`hmrf.inference.ENGINES`: the engine it builds, the settings the
    name fixes, and every parameter with its default, from the engine's signature;
``hmrf-cli COMMAND``
    every option of ``hmrf COMMAND`` with the help text and default that
    ``hmrf COMMAND --help`` prints (the parser and formatter of :mod:`hmrf.cli`);
``hmrf-results-rows FILE``
    the rows of a results table (``docs/results/FILE``) whose ``:column:`` is one of
    ``:values:``, with the file's notes and provenance: a page shows part of a results
    file without a second file holding the same cells;
``hmrf-tradeoff``
    one estimator against another in ``results/supervision.md``: the NMI of each at
    ``:at:`` pairs, the difference, and the ratio of their fit times (``:time:``).

Roles: ``{hmrf-default}`Class.param``` writes the default (``"auto"``),
``{hmrf-param}`Class.param``` the argument with it (``w="auto"``), and
``{hmrf-const}`module.NAME``` the value of a module constant (``4,096``).

The functions above the Sphinx part return plain data; ``tests/test_docs_lint.py``
uses them to compare the pages' prose with the code.
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "results")

#: where :func:`find_object` looks for a class or function named without its module
NAMESPACES = ("hmrf", "hmrf.inference", "hmrf.emissions", "hmrf.potentials", "hmrf.active",
              "hmrf.classic", "hmrf.model_selection", "hmrf.experiments", "hmrf.em",
              "hmrf.initialization", "hmrf.datasets", "hmrf.widgets", "hmrf.distributed")

#: the parameters shown in columns of the estimators' table (the others in one column)
SHARED = ("emission", "inference", "w", "init", "n_init", "max_iter", "tol")
#: parameters every estimator has and whose default says nothing
QUIET = ("self", "n_clusters", "random_state")


# --------------------------------------------------------------------- values
def literal(value) -> str:
    """A default as a user writes it in Python: ``"auto"``, ``1e-4``, ``np.inf``, ``None``."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "np.inf" if value > 0 else "-np.inf"
        text = f"{value:g}"
        return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2),
                      text)
    if isinstance(value, (tuple, list)):
        return repr(value)
    if callable(value):
        return getattr(value, "__name__", repr(value))
    return repr(value)


def find_object(name: str):
    """The class or function ``name`` (``"HMRFKMeans"``, ``"hmrf.model_selection.choose_w"``)."""
    if "." in name:
        module, _, attr = name.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            pass
    for ns in NAMESPACES:
        try:
            mod = importlib.import_module(ns)
        except ImportError:  # an optional extra (dask, anywidget) that is not installed
            continue
        if name in getattr(mod, "__all__", ()):
            return getattr(mod, name)
    raise LookupError(f"no public class or function {name!r} in {', '.join(NAMESPACES)}")


def signature_defaults(obj) -> dict:
    """``{parameter: default}`` of a class's constructor or a function (required ones left out)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    out = {}
    for name, p in inspect.signature(target).parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is p.empty:
            continue
        out[name] = p.default
    return out


def default_of(spec: str):
    """The default of ``"Class.param"`` (or ``"module.function.param"``)."""
    owner, _, param = spec.rpartition(".")
    defaults = signature_defaults(find_object(owner))
    if param not in defaults:
        raise LookupError(f"{owner} has no parameter {param!r} with a default "
                          f"(it has {', '.join(defaults) or 'none'})")
    return defaults[param]


def constant(spec: str):
    """The value of a module constant, ``"hmrf.emissions.mahalanobis.MAX_FULL_DIM"``."""
    module, _, name = spec.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise LookupError(f"no constant {spec!r}") from None


def number(value) -> str:
    """A number as the pages write it: ``4,096``, ``0.5``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return literal(value)


# ----------------------------------------------------------------- the tables
def estimator_classes() -> list:
    """Every public estimator of :mod:`hmrf`, in the order of ``hmrf.__all__``."""
    import hmrf

    out = []
    for name in hmrf.__all__:
        obj = getattr(hmrf, name)
        if inspect.isclass(obj) and hasattr(obj, "get_params") and hasattr(obj, "fit"):
            out.append(obj)
    return out


def estimator_defaults() -> dict:
    """``{class name: {parameter: default}}`` of every public estimator."""
    return {cls.__name__: signature_defaults(cls) for cls in estimator_classes()}


def engine_rows() -> list:
    """One ``dict`` per name of :data:`hmrf.inference.ENGINES`: ``name``, ``cls`` (the
    engine's class name), ``settings`` (the parameters the name sets to other values
    than the class's defaults), ``defaults`` (the class's signature) and ``description``."""
    from hmrf.inference import ENGINES

    rows = []
    for name, spec in ENGINES.items():
        factory = getattr(spec, "factory", spec)
        engine = factory()
        cls = type(engine)
        defaults = signature_defaults(cls)
        settings = {p: getattr(engine, p) for p, d in defaults.items()
                    if hasattr(engine, p) and not _same(getattr(engine, p), d)}
        doc = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        rows.append(dict(name=name, cls=cls.__name__, settings=settings, defaults=defaults,
                         description=getattr(spec, "description", doc)))
    return rows


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):
        return a is b


def engine_defaults() -> dict:
    """``{engine class name: {parameter: default}}`` of the engines :data:`ENGINES` builds."""
    return {row["cls"]: row["defaults"] for row in engine_rows()}


def cli_summary(command: str) -> str:
    """The one-line summary ``hmrf --help`` gives of ``command``."""
    from hmrf.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return next(a.help for a in sub._choices_actions if a.dest == command)


def cli_options(command: str) -> list:
    """One ``dict`` per option of ``hmrf COMMAND``: ``flags``, ``metavar``, ``help`` (the
    text ``--help`` prints, default included) and ``default`` (the part of it in
    ``(default: ...)``, else ``""``)."""
    from hmrf.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    p = sub.choices[command]
    formatter = p._get_formatter()
    rows = []
    for action in p._actions:
        if not action.option_strings or action.help == "==SUPPRESS==" or "-h" in action.option_strings:
            continue
        text = " ".join(formatter._expand_help(action).split())
        m = re.search(r"\(default:? ([^()]*(?:\([^()]*\)[^()]*)*)\)\s*$", text)
        default = m.group(1).strip() if m else ""
        if m:
            text = text[:m.start()].rstrip()
        metavar = action.metavar or (action.dest.upper() if action.nargs != 0 else "")
        if action.choices and not action.metavar:
            metavar = "{" + ",".join(map(str, action.choices)) + "}"
        rows.append(dict(flags=", ".join(action.option_strings), metavar=metavar or "",
                         help=text, default=default))
    return rows


def read_table(name: str):
    """``(header, rows, rest)`` of ``docs/results/<name>``: the first Markdown table's
    header and rows (lists of cells) and the text after it."""
    path = os.path.join(RESULTS, name if name.endswith(".md") else name + ".md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))

    def cells(line):
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = cells(lines[start])
    rows = [cells(line) for line in lines[start + 2:end]]
    return header, rows, "\n".join(lines[end:]).strip()


def _number(cell: str):
    m = re.match(r"\s*([-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?)", cell)
    return float(m.group(1).replace(",", "")) if m else None


def tradeoff(a: str, b: str, at: str, time: str, file: str = "supervision") -> list:
    """Per data set of a results table grouped by data set (``supervision.md``): the NMI
    of ``b`` and of ``a`` in column ``at``, ``a - b``, and the ratio of their ``time``
    columns: ``[(data set, nmi_b, nmi_a, diff, time ratio), ...]``."""
    header, rows, _ = read_table(file)
    col, tcol = header.index(at), header.index(time)
    out, group, seen = [], None, {}
    for row in rows + [["**end**"] + [""] * (len(header) - 1)]:
        if row[0]:
            if group and a in seen and b in seen:
                (na, ta), (nb, tb) = seen[a], seen[b]
                out.append((group, nb, na, na - nb, ta / tb if tb else float("nan")))
            group, seen = row[0].strip("*"), {}
        name = row[1] if len(row) > 1 else ""
        nmi_ = _number(row[col]) if len(row) > col else None
        t = _number(row[tcol]) if len(row) > tcol else None
        if name and nmi_ is not None and t is not None:
            seen[name] = (nmi_, t)
    return out


# ----------------------------------------------------------------- Markdown
def _md_table(header, rows) -> str:
    def esc(cell):
        return str(cell).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _code(text) -> str:
    return f"`{text}`" if text != "" else ""


def estimators_markdown() -> str:
    table = estimator_defaults()
    header = ["estimator", *(f"`{p}`" for p in SHARED), "other parameters"]
    rows = []
    for name, defaults in table.items():
        cells = [f"{{class}}`~hmrf.{name}`"]
        cells += [_code(literal(defaults[p])) if p in defaults else "—" for p in SHARED]
        rest = [f"`{p}={literal(v)}`" for p, v in defaults.items() if p not in SHARED and p not in QUIET]
        cells.append(", ".join(rest))
        rows.append(cells)
    return _md_table(header, rows)


def engines_markdown() -> str:
    rows = []
    for r in engine_rows():
        settings = ", ".join(f"`{p}={literal(v)}`" for p, v in r["settings"].items())
        params = ", ".join(f"`{p}={literal(v)}`" for p, v in r["defaults"].items())
        rows.append([f'`"{r["name"]}"`', f"{{class}}`~hmrf.inference.{r['cls']}`"
                     + (f" with {settings}" if settings else ""), params, r["description"]])
    return _md_table(["`inference=`", "engine", "parameters and defaults", "what it is"], rows)


def cli_markdown(command: str) -> str:
    head = f"`hmrf {command}`: {cli_summary(command)}."
    def flags_as_code(text):  # so that no typography turns "--data" into a dash
        return re.sub(r"(?<![\w`])(--[\w-]+)", r"`\1`", text)

    rows = [[f"`{r['flags']}`" + (f" `{r['metavar']}`" if r["metavar"] else ""),
             (_code(r["default"]) if " " not in r["default"] else flags_as_code(r["default"])),
             flags_as_code(r["help"])]
            for r in cli_options(command)]
    return head + "\n\n" + _md_table(["option", "default", "what it sets"], rows)


def results_rows_markdown(file: str, column: str, values: list) -> str:
    header, rows, rest = read_table(file)
    col = header.index(column)
    kept, group, shown = [], None, set()
    for row in rows:
        if row[0]:
            group = row[0]
        if row[col] in values:
            kept.append([group if group not in shown else "", *row[1:]])
            shown.add(group)
    note = f"Rows of `docs/results/{file}` ({', '.join(values)}); its notes are under the whole table."
    provenance = [line for line in rest.splitlines() if line.startswith("<small>")]
    return "\n\n".join([_md_table(header, kept), note, *provenance])


def tradeoff_markdown(a: str, b: str, at: str, time: str, file: str = "supervision") -> str:
    rows = [[f"**{ds}**", f"{nb:.3f}", f"{na:.3f}", f"{d:+.3f}", f"{r:.1f}×" if r >= 1 else f"{r:.2f}×"]
            for ds, nb, na, d, r in tradeoff(a, b, at, time, file)]
    header = ["data set", f"{b}, NMI at {at}", f"{a}, NMI at {at}", f"{a} − {b}",
              f"fit time {a} / {b} ({time})"]
    note = (f"Computed when the page is built from `docs/results/{file}.md` (the table "
            "above): the same cells, not retyped.")
    return _md_table(header, rows) + "\n\n" + note


# -------------------------------------------------------------------- Sphinx
def setup(app):
    from docutils import nodes
    from docutils.parsers.rst import directives
    from sphinx.util.docutils import SphinxDirective, SphinxRole

    class _Markdown(SphinxDirective):
        has_content = False

        def markdown(self) -> str:  # pragma: no cover - overridden
            raise NotImplementedError

        def run(self):
            for name in ("hmrf", "hmrf.inference", "hmrf.cli", "hmrf.estimators"):
                mod = importlib.import_module(name)
                if getattr(mod, "__file__", None):
                    self.env.note_dependency(mod.__file__)
            try:
                text = self.markdown()
            except (LookupError, ValueError, OSError) as exc:
                raise self.error(f"{self.name}: {exc}") from None
            return self.parse_text_to_nodes(text)

    class Defaults(_Markdown):
        required_arguments = 1

        def markdown(self):
            kind = self.arguments[0]
            if kind == "estimators":
                return estimators_markdown()
            if kind == "engines":
                return engines_markdown()
            raise ValueError(f"unknown table {kind!r}: estimators or engines")

    class Cli(_Markdown):
        required_arguments = 1

        def markdown(self):
            return cli_markdown(self.arguments[0])

    class ResultsRows(_Markdown):
        required_arguments = 1
        option_spec = {"column": directives.unchanged_required, "values": directives.unchanged_required}

        def markdown(self):
            file = self.arguments[0]
            self.env.note_dependency(os.path.join(RESULTS, file))
            values = [v.strip() for v in self.options["values"].split(",")]
            return results_rows_markdown(file, self.options["column"], values)

    class Tradeoff(_Markdown):
        option_spec = {"a": directives.unchanged_required, "b": directives.unchanged_required,
                       "at": directives.unchanged_required, "time": directives.unchanged_required}

        def markdown(self):
            self.env.note_dependency(os.path.join(RESULTS, "supervision.md"))
            o = self.options
            return tradeoff_markdown(o["a"], o["b"], o["at"], o["time"])

    class DefaultRole(SphinxRole):
        def __init__(self, with_name: bool):
            self.with_name = with_name

        def run(self):
            try:
                value = literal(default_of(self.text.strip()))
            except (LookupError, ValueError) as exc:
                msg = self.inliner.reporter.error(f"{self.name}: {exc}", line=self.lineno)
                return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
            param = self.text.strip().rpartition(".")[2]
            text = f"{param}={value}" if self.with_name else value
            return [nodes.literal(self.rawtext, text)], []

    class ConstRole(SphinxRole):
        def run(self):
            try:
                value = constant(self.text.strip())
            except LookupError as exc:
                msg = self.inliner.reporter.error(f"{self.name}: {exc}", line=self.lineno)
                return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
            if isinstance(value, str):
                return [nodes.literal(self.rawtext, literal(value))], []
            return [nodes.Text(number(value))], []

    app.add_directive("hmrf-defaults", Defaults)
    app.add_directive("hmrf-cli", Cli)
    app.add_directive("hmrf-results-rows", ResultsRows)
    app.add_directive("hmrf-tradeoff", Tradeoff)
    app.add_role("hmrf-default", DefaultRole(False))
    app.add_role("hmrf-param", DefaultRole(True))
    app.add_role("hmrf-const", ConstRole())
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
