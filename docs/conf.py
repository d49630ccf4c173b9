"""Sphinx configuration of the hmrf documentation.

Build (what ``tests/test_docs.py`` runs; warnings are errors, broken references fail)::

    sphinx-build -W --keep-going -b html docs docs/_build/html

The build executes each notebook of ``notebooks/`` once, in a fresh kernel, and the
site shows its figures and tables; an error in a cell fails the build, so this
execution is the notebooks' test. Outputs are cached by jupyter-cache in
``docs/_build/.jupyter_cache``: a notebook whose code did not change is not run again
by the next build. ``tests/test_docs.py`` gives its build the test run's own cache, into
which each notebook's test (``tests/test_notebooks.py``) has executed it, so every
notebook runs once per test run. A notebook that needs a data package (its metadata
``{"hmrf": {"requires": [...]}}``) is shown without outputs when the package is
missing.

The "how to add an emission family / a potential" pages and the other pages written
as executable MyST notebooks (``file_format: mystnb`` front matter with
``execution_mode: force``) are executed by every build.

Facts about the code (every estimator's and engine's parameters and defaults, every
command's options, defaults in the prose) are written into the pages by the extension
``_ext/hmrf_facts.py`` from the code itself, at build time.

While writing, a build that executes nothing (no page, no notebook) is much faster::

    HMRF_DOCS_NO_EXECUTE=1 sphinx-build -b html docs /tmp/docs_fast
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package, also when it is not installed
sys.path.insert(0, os.path.join(HERE, "_ext"))  # this documentation's own extension

import hmrf  # noqa: E402

project = "hmrf"
author = "hmrf developers"
copyright = "hmrf developers"  # noqa: A001
release = hmrf.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
    "hmrf_facts",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "README.md",
                    "jupyter_execute",
                    # tables written by benchmark scripts (benchmarks/_results.py), included by pages
                    "results"]
templates_path = ["_templates"]
root_doc = "index"

# ----------------------------------------------------------------------- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"hmrf {release}"
html_static_path = ["_static"]
html_css_files = ["hmrf.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_show_sourcelink = False

# --------------------------------------------------------------- MyST and nb
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "cache"
nb_execution_cache_path = os.path.join(HERE, "_build", ".jupyter_cache")
nb_execution_timeout = 120  # seconds per cell
nb_execution_raise_on_error = True  # an error in an executed page fails the build
nb_execution_show_tb = True
nb_merge_streams = True


def _missing_requirements() -> list:
    """Notebooks whose data packages (metadata ``hmrf.requires``) are not installed."""
    import importlib.metadata
    import json

    skip = []
    for name in sorted(os.listdir(os.path.join(HERE, "notebooks"))):
        if not name.endswith(".ipynb"):
            continue
        with open(os.path.join(HERE, "notebooks", name), encoding="utf-8") as f:
            meta = json.load(f).get("metadata", {})
        for package in meta.get("hmrf", {}).get("requires", []):
            try:
                importlib.metadata.distribution(package)
            except importlib.metadata.PackageNotFoundError:
                skip.append(f"notebooks/{name}")
    return skip


nb_execution_excludepatterns = _missing_requirements()
if os.environ.get("HMRF_DOCS_NO_EXECUTE"):  # the fast build of the module docstring
    nb_execution_excludepatterns = ["*.md", "*.ipynb"]
    suppress_warnings = ["myst-nb.lexer"]  # the lexer comes from an executed kernel

# ------------------------------------------------------------ API reference
autosummary_generate = True
# autosummary writes its stubs into the source tree and never deletes stale ones; start
# clean so a renamed or moved object cannot leave an orphan page behind
shutil.rmtree(os.path.join(os.path.dirname(os.path.abspath(__file__)), "api", "generated"),
              ignore_errors=True)
autosummary_imported_members = False
# The annotations (PEP 484; the package ships py.typed) show in the signatures; the
# numpydoc sections keep the prose types with shapes ("ndarray (n, k)"). Names a module
# imports only under TYPE_CHECKING stay as written ("NDArray[np.intp]", "MatrixLike");
# nitpick_ignore_regex below lists them.
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
numpydoc_show_class_members = False  # members come from the autosummary templates
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False  # types are prose ("ndarray (n, k)"), not references
numpydoc_validation_checks = set()

# ------------------------------------------------ broken references fail the build
nitpicky = True
# Third-party objects. The build runs without network access (CI has none), so
# intersphinx cannot fetch NumPy's, SciPy's or scikit-learn's inventories and their
# names cannot resolve. Each pattern below is such a third-party namespace; an
# unresolved *hmrf* name is never ignored.
nitpick_ignore_regex = [
    # NumPy, SciPy, scikit-learn (also the estimators' base classes shown by
    # show-inheritance), networkx, pgmpy, cvxpy, matplotlib
    (r"py:.*", r"(numpy|np|scipy|sp|sklearn|networkx|nx|pgmpy|cvxpy|cp|matplotlib)(\..*)?"),
    # anywidget and traitlets: the oracle widget's base classes (show-inheritance)
    (r"py:.*", r"(anywidget|traitlets|ipywidgets)(\..*)?"),
    # the standard library (base classes shown by show-inheritance, a module reference)
    (r"py:.*", r"(object|Exception|ValueError|TypeError|RuntimeError|UserWarning|"
               r"RuntimeWarning|ImportError|abc\.ABC|enum\.Enum|typing\.\w+|importlib\.metadata)"),
    # names annotations import only for type checking (typing.TYPE_CHECKING), so autodoc
    # sees them as written: numpy.typing's, SciPy's sparse classes, Dask, matplotlib,
    # pgmpy and scikit-learn types, the standard library's, and hmrf's own aliases
    # (MatrixLike, PairsLike, RandomLike, defined in the private hmrf._typing) and the
    # TypeVar of hmrf.graph's typed cache
    (r"py:class", r"(NDArray|ArrayLike|DTypeLike|MatrixLike|PairsLike|RandomLike|sparse\..*|"
                  r"da\..*|dask\..*|Axes|Figure|BaseEstimator|DiscreteMarkovNetwork|FactorGraph|"
                  r"ModuleType|Path|os\.PathLike|argparse\..*|collections\.abc\..*|t\.Any|"
                  r"hmrf\.graph\.T)"),
    # names in hmrf's private modules (a leading underscore): implementation details,
    # deliberately not in the reference; a docstring may still name them
    (r"py:.*", r"hmrf(\.\w+)*\._\w+.*"),
]

# ------------------------------------------------- public names and their aliases
# Every public object is documented once, under the name users import it by (e.g.
# ``hmrf.HMRF``, ``hmrf.emissions.BregmanFamily``); docstrings also refer to it by its
# defining module (``hmrf.model.HMRF``) or by a short name. ``_resolve_alias`` maps
# those spellings to the documented one. A name that matches nothing still fails.
PUBLIC_NAMESPACES = [
    "hmrf", "hmrf.constraints", "hmrf.graph", "hmrf.emissions", "hmrf.potentials",
    "hmrf.model", "hmrf.inference", "hmrf.inference.lp", "hmrf.inference.lp_cvxpy",
    "hmrf.inference.bp.trws", "hmrf.inference.base", "hmrf.inference.icm",
    "hmrf.inference.bp", "hmrf.inference.bp.schedules", "hmrf.inference.milp", "hmrf.inference.greedy",
    "hmrf.inference.polish", "hmrf.inference.rounding", "hmrf.em", "hmrf.em.loop", "hmrf.em.passes",
    "hmrf.em.sparse", "hmrf.em.soft",
    "hmrf.initialization", "hmrf.estimators", "hmrf.model_selection", "hmrf.inference.meanfield", "hmrf.emissions.stats",
    "hmrf.inference.expansion", "hmrf.inference.qpbo",
    "hmrf.classic",
    "hmrf.metrics", "hmrf.datasets", "hmrf.datasets.text", "hmrf.datasets.files",
    "hmrf.experiments", "hmrf.experiments.engines", "hmrf.active",
    "hmrf.interop", "hmrf.exceptions",
    "hmrf.distributed", "hmrf.widgets", "hmrf.cli",
]


def _alias_table() -> dict:
    """``{spelling: public name}`` for every object in a public ``__all__``."""
    first = {}  # id(obj) -> first public name (namespaces are listed by preference)
    table = {}
    home = {}  # public name -> defining module (the context of its docstring)
    for ns in PUBLIC_NAMESPACES:
        mod = importlib.import_module(ns)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                table.setdefault(f"{ns}.{name}", f"{ns}.{name}")  # data: documented in place
                continue
            public = first.setdefault(id(obj), f"{ns}.{name}")
            table[f"{ns}.{name}"] = public
            table[f"{obj.__module__}.{obj.__qualname__}"] = public
            home[public] = obj.__module__
    return table, home


_ALIASES = None


def _resolve_alias(app, env, node, contnode):
    """Resolve a Python reference by its other spellings (see ``_alias_table``)."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    global _ALIASES
    if _ALIASES is None:
        _ALIASES = _alias_table()
    table, home = _ALIASES
    candidates = []
    # a short name in a docstring means a name of the module that docstring is in
    context = ".".join(x for x in (node.get("py:module"), node.get("py:class")) if x)
    for scope in (context, home.get(context), home.get(context.rsplit(".", 1)[0])):
        if scope and not target.startswith("hmrf."):
            candidates.append(f"{scope}.{target}")
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):  # longest known prefix first
        prefix = ".".join(parts[:cut])
        if prefix in table and table[prefix] != prefix:
            candidates.append(".".join([table[prefix], *parts[cut:]]))
            break
    if not target.startswith("_"):
        # a short name ("Constraints", "PairwiseGraph.from_tables") used in a module that
        # does not define it: accept it when exactly one documented object ends with it
        suffix = "." + target
        hits = sorted(name for name, entry in domain.objects.items()
                      if name.endswith(suffix) and not entry.aliased)
        if len(hits) == 1:
            candidates.append(hits[0])
    for new in candidates:
        new = table.get(new, new)
        if new in domain.objects:
            obj = domain.objects[new]
            from sphinx.util.nodes import make_refnode

            return make_refnode(app.builder, node["refdoc"], obj.docname, obj.node_id, contnode, new)
    return None


def _skip_member(app, what, name, obj, skip, options):
    """Document the engine extension point ``_solve``; hide scikit-learn's generated
    metadata-routing methods (``set_fit_request``, ...), which are not hmrf's API."""
    if name == "_solve":
        return False
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _public_bases(app, name, obj, options, bases):
    """Show a private base class (``_MetricLearner``) as its own public bases."""
    out = []
    todo = list(bases)
    while todo:
        b = todo.pop(0)
        if b is object:
            continue
        if getattr(b, "__name__", "").startswith("_"):
            todo[:0] = list(b.__bases__)
        elif b not in out:
            out.append(b)
    bases[:] = out


def _init_signature(app, what, name, obj, options, signature, return_annotation):
    """A class whose ``__new__`` only passes its arguments on (the estimators refuse
    renamed keywords there, ``HMRF`` picks the model of its rows' backend) shows
    ``__init__``'s parameters, the ones a user passes, instead of ``(*args, **kwargs)``."""
    if what != "class" or "*args" not in (signature or "") or obj.__new__ is object.__new__:
        return None
    from sphinx.util.inspect import signature as init_signature
    from sphinx.util.inspect import stringify_signature

    sig = init_signature(obj.__init__, bound_method=True, type_aliases=app.config.autodoc_type_aliases)
    shown = stringify_signature(sig, show_return_annotation=False, unqualified_typehints=True)
    return shown, return_annotation


def setup(app):
    app.connect("autodoc-process-signature", _init_signature)
    app.connect("missing-reference", _resolve_alias)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-bases", _public_bases)
