"""The documentation speaks in one voice: what the pages say about the code is true of it.

Read as text, without building the site (``tests/test_docs.py`` builds it and executes
every executable page and notebook), the user pages (``docs/*.md``, the results tables
``docs/results/*.md``, the notebooks' cells, ``docs/api/*.rst``) are checked for:

* history: words that tell how the library changed ("no longer", "previously", "this
  change", "was", ...) belong in CHANGES.md; a page says what is. ``ALLOWED`` lists
  the phrases where such a word describes something else (a query that was asked);
* commands a reader cannot run: machine-specific paths and locks (``flock``,
  ``/work/``, ``/tmp/bench.lock``), ``hmrf`` command lines the parser refuses, engine,
  estimator, selector or data set names that do not exist, ``inference="..."`` names
  no estimator accepts, guards for other versions of the library (``if "x" in
  ENGINES``);
* snippets that do not run: every ```` ```python ```` block of a page is either a
  ``{code-cell}`` of a page the docs build executes, or says why it is not run in a
  ``% not run: <reason>`` line right above it (and still compiles);
* defaults: a `` `name=value` `` next to the word "default" must be the default of
  ``name`` in the code (the estimators', engines', selectors' and the named functions'
  signatures); the ``hmrf`` commands' help texts take the estimators' defaults from
  their signatures;
* the reference: no object listed twice in the API pages' autosummaries; every
  results file included by a page; every exception and warning the package raises in
  the errors table of docs/choosing.md, each importable by the name the table gives.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import hmrf_facts  # noqa: E402

PAGES = sorted(DOCS.glob("*.md"))
RESULTS = sorted((DOCS / "results").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
API = sorted((DOCS / "api").glob("*.rst"))
BENCHMARKS = sorted((ROOT / "benchmarks").rglob("*.py"))

#: words and phrases that narrate how the library changed
HISTORY = [r"\bno longer\b", r"\bthis change\b", r"\bpreviously\b", r"\bearlier defaults?\b",
           r"\bused to\b", r"\bformerly\b", r"\bnow\b", r"\bwas\b", r"\bwere\b",
           r"\bhas become\b", r"\bhave become\b", r"\b(?:old|new) defaults?\b", r"\buntil now\b",
           r"\bany ?more\b", r"\bgot there\b", r"\bprofiled\b", r"\bstill have\b",
           r"\bhistorically\b", r"\bbefore this\b", r"\bearlier (?:releases?|versions?)\b"]
#: phrases in which such a word does not narrate history (a query that was asked)
ALLOWED = [r"the person was asked", r"each query was placing", r"since it was trained",
           r"labelling was rejected", r"clusters were re-seeded", r"how busy they were",
           r"how many E-steps EM rejected", r"which was the best", r"was the best"]
#: machine-specific paths and locks: a reader's machine has none of them
MACHINE = [r"\bflock\b", r"/work/", r"/tmp/bench\.lock", r"/home/\w", r"/root/"]


# --------------------------------------------------------------------- reading
def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def _front_matter(text: str) -> str:
    m = re.match(r"---\n(.*?)\n---\n", text, flags=re.S)
    return m.group(1) if m else ""


def _fences(text: str):
    """``(info, body, line before the fence)`` of every fenced block (``` or ~~~)."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", lines[i])
        if m:
            fence, info = m.group(2), m.group(3).strip()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            out.append((info, "\n".join(lines[i + 1:j]), lines[i - 1] if i else ""))
            i = j + 1
        else:
            i += 1
    return out


def _prose(text: str) -> str:
    """The text of a Markdown page without front matter, fenced blocks, inline code,
    math, roles' targets and links' addresses: what a reader reads as sentences."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"^(\s*)(`{3,}|~{3,}).*?^\s*\2\s*$", "", text, flags=re.S | re.M)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"\$[^$\n]*\$", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return text


def _notebook_cells(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        yield cell["cell_type"], "".join(cell["source"])


def _user_texts():
    """``(name, prose)`` of every user page, results table, notebook cell and API page."""
    for p in PAGES + RESULTS:
        yield _name(p), _prose(p.read_text(encoding="utf-8"))
    for nb in NOTEBOOKS:
        for i, (kind, src) in enumerate(_notebook_cells(nb)):
            if kind == "markdown":
                yield f"{_name(nb)} cell {i}", _prose(src)
            elif kind == "code":
                comments = "\n".join(m.group(1) for m in re.finditer(r"#(.*)$", src, flags=re.M))
                yield f"{_name(nb)} cell {i} comments", comments
    for p in API:
        text = p.read_text(encoding="utf-8")
        prose = "\n".join(line for line in text.splitlines()
                          if line.strip() and not line.startswith((" ", "..", "=", "-", "`")))
        yield _name(p), prose


def _commands():
    """``(where, text)`` of every shell block and inline command of the pages and
    notebooks, of every results file's provenance line and of the benchmark scripts'
    docstrings."""
    for p in PAGES:
        text = p.read_text(encoding="utf-8")
        for info, body, _ in _fences(text):
            if info in ("bash", "sh", "shell", "console", "text", ""):
                yield p.name, body
        for m in re.finditer(r"`([^`\n]*\b(?:hmrf|python|pip|sphinx-build)\b[^`\n]*)`", _strip_fences(text)):
            yield p.name, m.group(1)
    for nb in NOTEBOOKS:
        for kind, src in _notebook_cells(nb):
            if kind == "markdown":
                for _, body, _ in _fences(src):
                    yield nb.name, body
                for m in re.finditer(r"`([^`\n]*)`", src):
                    yield nb.name, m.group(1)
            else:
                yield nb.name, "\n".join(line[1:] for line in src.splitlines() if line.startswith("!"))
    for p in RESULTS:
        for m in re.finditer(r"Written by `(.*?)` on", p.read_text(encoding="utf-8")):
            yield p.name, m.group(1)
    for p in BENCHMARKS:  # their docstrings are the instructions the results files point to
        yield _name(p), ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or ""


def _strip_fences(text: str) -> str:
    return re.sub(r"^(\s*)(`{3,}|~{3,}).*?^\s*\2\s*$", "", text, flags=re.S | re.M)


def _hmrf_lines():
    """Every ``hmrf <command> ...`` line of the pages' and notebooks' shell blocks, with
    continuations joined, comments and optional ``[...]`` groups removed."""
    blocks = []
    for p in PAGES:
        blocks += [(p.name, body) for info, body, _ in _fences(p.read_text(encoding="utf-8"))
                   if info in ("bash", "sh", "shell", "console", "text", "")]
    for nb in NOTEBOOKS:
        for kind, src in _notebook_cells(nb):
            if kind == "markdown":
                blocks += [(nb.name, body) for _, body, _ in _fences(src)]
    for p in PAGES:  # commands in a sentence, but not a pattern such as "hmrf <command> --help"
        blocks += [(p.name, m.group(1)) for m in
                   re.finditer(r"`((?:python -m )?hmrf [^`<>\n]+)`", _strip_fences(p.read_text(encoding="utf-8")))]
    for where, body in blocks:
        body = body.replace("\\\n", " ")
        for line in body.splitlines():
            line = re.sub(r"\s#.*$", "", line).strip()
            line = re.sub(r"\[[^\[\]]*\]", " ", line)
            for part in re.split(r"&&|;|\|", line):
                m = re.search(r"(?:^|\s)((?:python -m )?hmrf(?:\s.*)?)$", part.strip())
                if m:
                    yield where, m.group(1)


# ------------------------------------------------------------------- history
def test_no_history_in_user_pages():
    found = []
    for name, text in _user_texts():
        for allowed in ALLOWED:
            text = re.sub(allowed, " ", text, flags=re.I)
        for pattern in HISTORY:
            for m in re.finditer(pattern, text, flags=re.I):
                start = text.rfind("\n", 0, m.start()) + 1
                end = text.find("\n", m.end())
                found.append(f"{name}: {m.group(0)!r} in: {text[start:end].strip()[:140]}")
    assert not found, "history words in user pages (they go in CHANGES.md):\n" + "\n".join(found)


def test_no_version_guards_in_examples():
    """An example runs on the library it documents: no ``if name in ENGINES`` guards for
    other versions of it."""
    guard = re.compile(r"\bif\b[^\n]*\bin\b[^\n]*\b(?:ENGINES|ESTIMATORS|__all__)\b|hasattr\(hmrf|__version__\s*[<>]")
    found = []
    for nb in NOTEBOOKS:
        for i, (kind, src) in enumerate(_notebook_cells(nb)):
            if kind == "code" and guard.search(src):
                found.append(f"{nb.name} cell {i}: {guard.search(src).group(0)}")
    for p in PAGES:
        for _, body, _ in _fences(p.read_text(encoding="utf-8")):
            if guard.search(body):
                found.append(f"{p.name}: {guard.search(body).group(0)}")
    assert not found, "\n".join(found)


# ------------------------------------------------------------------ commands
def test_commands_have_no_machine_specific_paths():
    found = [f"{where}: {m.group(0)!r} in {text.strip()[:120]!r}"
             for where, text in _commands() for pattern in MACHINE
             for m in re.finditer(pattern, text)]
    assert not found, "machine-specific paths or locks in commands:\n" + "\n".join(found)


def _registered_in_pages() -> set:
    """Names the pages register themselves (``register_engine("sa", ...)``, the plug-in of
    docs/extending.md): a command or snippet after it may use them."""
    pattern = r"""register_(?:engine|emission)\(\s*["']([^"']+)["']"""
    return {m.group(1).lower() for p in PAGES for m in re.finditer(pattern, p.read_text(encoding="utf-8"))}


def test_hmrf_commands_parse_and_name_what_exists():
    from hmrf.cli import build_parser
    from hmrf.commands.active import SELECTORS
    from hmrf.datasets import DATASETS
    from hmrf.estimators import ESTIMATORS, estimator_key
    from hmrf.inference import ENGINES

    parser = build_parser()
    lines = list(_hmrf_lines())
    bad = []
    for where, line in lines:
        argv = shlex.split(line)
        argv = argv[3:] if argv[:3] == ["python", "-m", "hmrf"] else argv[1:]
        if any(a in ("-h", "--help") for a in argv) or (argv and argv[0].endswith(":")):
            continue  # help, or a message the command prints ("hmrf fit: error: ...")
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            bad.append(f"{where}: the parser refuses {line!r}")
            continue
        engines = [e for key in ("engine", "engines") for e in str(getattr(args, key, "") or "").split(",") if e]
        given = getattr(args, "estimator", None) or []
        given = [given] if isinstance(given, str) else given
        estimators = [e for v in given for e in str(v).split(",") if e]
        for e in engines:
            if e.strip().lower() not in ENGINES and e.strip().lower() not in _registered_in_pages():
                bad.append(f"{where}: unknown engine {e!r} in {line!r}")
        for e in estimators:
            if estimator_key(e) not in ESTIMATORS and e != "own":
                bad.append(f"{where}: unknown estimator {e!r} in {line!r}")
        if getattr(args, "selector", None) not in (None, *SELECTORS):
            bad.append(f"{where}: unknown selector in {line!r}")
        if getattr(args, "dataset", None) not in (None, *DATASETS):
            bad.append(f"{where}: unknown data set in {line!r}")
    assert not bad, "\n".join(bad)
    assert len(lines) >= 10  # the pages do show commands, and this test sees them


def test_engine_names_in_the_pages_exist():
    """``inference="name"`` in a page or notebook names an engine of ENGINES (or one of
    the posterior methods soft EM accepts)."""
    from hmrf.inference import ENGINES

    soft = getattr(importlib.import_module("hmrf.em.soft"), "POSTERIORS", ())
    known = set(ENGINES) | set(soft) | _registered_in_pages()
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in PAGES]
    texts += [(nb.name, "".join(src for _, src in _notebook_cells(nb))) for nb in NOTEBOOKS]
    bad = [f"{name}: inference={m.group(1)!r}" for name, text in texts
           for m in re.finditer(r"""inference\s*=\s*\\?["']([^"'\\]+)\\?["']""", text)
           if m.group(1).lower() not in known]
    assert not bad, "unknown engine names:\n" + "\n".join(bad)


# ------------------------------------------------------------------ snippets
def test_every_python_snippet_runs_or_says_why():
    bad = []
    for p in PAGES:
        text = p.read_text(encoding="utf-8")
        executed = re.search(r"execution_mode:\s*force", _front_matter(text)) is not None
        for info, body, before in _fences(text):
            if info.startswith("{code-cell}") and not executed:
                bad.append(f"{p.name}: a code cell on a page the docs build does not execute "
                           "(front matter execution_mode: force)")
            if info in ("python", "py", "python3", "pycon"):
                m = re.match(r"%\s*not run:\s*(\S.*)$", before.strip())
                if not m:
                    bad.append(f"{p.name}: a python block that is not executed and does not say "
                               f"why ('% not run: <reason>' above it): {body.strip()[:80]!r}")
                try:
                    compile(body, p.name, "exec")
                except SyntaxError as exc:
                    bad.append(f"{p.name}: a python block does not compile: {exc}")
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------ defaults
def _known_signatures() -> dict:
    """``{owner name: {parameter: default}}`` for the estimators, engines, emission
    families and selectors."""
    import hmrf.active
    import hmrf.emissions

    out = dict(hmrf_facts.estimator_defaults())
    out.update(hmrf_facts.engine_defaults())
    for mod in (hmrf.active, hmrf.emissions):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, type):
                try:
                    out.setdefault(name, hmrf_facts.signature_defaults(obj))
                except (TypeError, ValueError):
                    pass
    return out


def _value(text: str):
    text = text.strip().replace("np.inf", "float('inf')")
    if text == "float('inf')":
        return float("inf")
    return ast.literal_eval(text)


def _same_value(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def test_defaults_stated_in_the_prose_are_the_code_s():
    """A `` `name=value` `` nearest to the word "default" (within a sentence) is checked
    against the signatures of the classes the sentence names, else of every estimator,
    engine, emission family and selector that has ``name``."""
    sigs = _known_signatures()
    token = re.compile(r"`(\w+)=([^`]+)`")
    bad, checked = [], 0
    for p in PAGES:
        text = _strip_fences(re.sub(r"\A---\n.*?\n---\n", "", p.read_text(encoding="utf-8"), flags=re.S))
        for sentence in re.split(r"(?<=[.;:])\s+(?=[A-Z`(*])|\n\n|\|", text):
            for m in re.finditer(r"\bdefaults?\b", sentence):
                if re.match(r"defaults? (?:but|otherwise|except)", sentence[m.start():]) or \
                        re.search(r"\bnot\s+(?:its\s+|the\s+)?$", sentence[max(0, m.start() - 12):m.start()]):
                    continue  # "at its defaults but for w", "not its defaults": not the default
                near = [t for t in token.finditer(sentence) if abs(t.start() - m.start()) < 60]
                if not near:
                    continue
                t = min(near, key=lambda t: abs(t.start() - m.start()))
                name, raw = t.group(1), t.group(2)
                try:
                    value = _value(raw)
                except (ValueError, SyntaxError):
                    continue
                named = [c for c in sigs if re.search(rf"\b{c}\b", sentence) and name in sigs[c]]
                owners = named or [c for c, d in sigs.items() if name in d]
                if not owners:
                    continue
                checked += 1
                if not any(_same_value(sigs[c][name], value) for c in owners):
                    bad.append(f"{p.name}: `{name}={raw}` stated as a default; the code has "
                               + ", ".join(f"{c}: {hmrf_facts.literal(sigs[c][name])}" for c in owners)
                               + f"\n    in: {sentence.strip()[:160]!r}")
    assert not bad, "\n".join(bad)
    assert checked >= 5  # the pages do state defaults, and this test sees them


def test_help_texts_take_the_estimators_defaults_from_their_signatures():
    """``--engine`` and ``--w`` say the estimator's own default as the signatures have it,
    and no command's source types one by hand."""
    import inspect

    from hmrf.estimators import ESTIMATORS

    shown = {(c, r["flags"]): r["default"] for c in ("fit", "curve", "compare", "active")
             for r in hmrf_facts.cli_options(c)}
    engine_default = inspect.signature(ESTIMATORS["hmrf-kmeans"].load()).parameters["inference"].default
    w_default = inspect.signature(ESTIMATORS["hmrf-kmeans"].load()).parameters["w"].default
    assert shown["fit", "--engine"].startswith(f"the estimator's own, {engine_default}")
    for c in ("fit", "curve", "compare", "active"):
        assert shown[c, "--w"].startswith(f"the estimator's own, {w_default}"), c
    from hmrf.commands._common import signature_default  # what the help reads, without imports

    for spec in ESTIMATORS.values():
        params = inspect.signature(spec.load()).parameters
        for name in ("inference", "w", "init", "n_init"):
            if name in params:
                assert signature_default(spec, name) == params[name].default, (spec.cls, name)
    source = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "hmrf" / "commands").glob("*.py"))
    assert not re.search(r"estimator's own, (?:icm|auto|bp)\b", source)


def test_generated_tables_cover_the_code():
    """The tables the docs build writes list every public estimator, engine name and
    option: what the pages show is all there is."""
    import hmrf
    from hmrf.cli import COMMANDS
    from hmrf.inference import ENGINES

    estimators = hmrf_facts.estimators_markdown()
    for cls in hmrf_facts.estimator_classes():
        assert f"hmrf.{cls.__name__}`" in estimators
        for name, value in hmrf_facts.signature_defaults(cls).items():
            if name not in hmrf_facts.QUIET:
                assert hmrf_facts.literal(value) in estimators
    assert {c.__name__ for c in hmrf_facts.estimator_classes()} >= {"HMRFKMeans", "HAC", "NaiveBayesEM"}
    engines = hmrf_facts.engines_markdown()
    assert all(f'`"{name}"`' in engines for name in ENGINES)
    for command in COMMANDS:
        table = hmrf_facts.cli_markdown(command)
        assert "`--out`" in table or "`--out` `DIR`" in table, command
    assert hmrf_facts.default_of("BeliefPropagation.max_iter") == \
        hmrf.inference.BeliefPropagation().max_iter


def test_every_command_has_its_options_table():
    from hmrf.cli import COMMANDS

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [c for c in COMMANDS if f"```{{hmrf-cli}} {c}\n" not in page]
    assert not missing, f"docs/cli.md has no options table of: {missing}"


# ----------------------------------------------------------------- reference
def test_api_autosummaries_list_each_object_once():
    seen, dup = {}, []
    for page in API:
        module = None
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"\.\. currentmodule:: (\S+)", lines[i])
            if m:
                module = m.group(1)
            if lines[i].startswith(".. autosummary::"):
                i += 1
                while i < len(lines) and (lines[i].startswith("   ") or not lines[i].strip()):
                    entry = lines[i].strip()
                    if entry and not entry.startswith(":"):
                        obj = getattr(importlib.import_module(module), entry, None)
                        key = id(obj) if obj is not None else f"{module}.{entry}"
                        if key in seen:
                            dup.append(f"{page.name}: {module}.{entry} (also {seen[key]})")
                        seen[key] = f"{page.name}: {module}.{entry}"
                    i += 1
                continue
            i += 1
    assert not dup, "listed twice:\n" + "\n".join(dup)


def test_every_results_file_is_shown_and_every_include_exists():
    used = set()
    for p in PAGES:
        text = p.read_text(encoding="utf-8")
        used |= set(re.findall(r"\{include\}\s+results/([\w.-]+\.md)", text))
        used |= {f"{m}" if m.endswith(".md") else f"{m}.md"
                 for m in re.findall(r"\{hmrf-results-rows\}\s+([\w.-]+)", text)}
        if "{hmrf-tradeoff}" in text:
            used.add("supervision.md")
    files = {p.name for p in RESULTS}
    assert not used - files, f"included but missing: {sorted(used - files)}"
    assert not files - used, f"results files no page shows (stale? remove or include): {sorted(files - used)}"


def _table(name: str) -> list[dict]:
    """The first markdown table of ``docs/results/<name>``, one dict per row (an empty
    first cell takes the previous row's, as the grouped tables write it)."""
    lines = [ln for ln in (DOCS / "results" / name).read_text(encoding="utf-8").splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| "))
    rows, header, last = [], None, ""
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(ln) <= set("|-: "):
            last = cells[0] or last
            rows.append(dict(zip(header, [last, *cells[1:]])))
    return rows


def test_results_files_that_share_a_measurement_agree():
    """One number, one source: where two results files show the same fits, each shows
    the same value (so re-running one script alone shows up here)."""
    auto = {(r["data set"], r["pairs"]): r["auto: J above best / NMI"].split("/")[-1].strip()
            for r in _table("default_engine.md") if r["pairs"]}
    for r in _table("auto_weight.md"):
        key = (r["data set"], r["pairs"])
        if key in auto:  # w = 2 s is what w="auto" resolves to: the same fits
            assert r["w = 2 s"] == auto[key], f"{key}: auto_weight.md {r['w = 2 s']}, default_engine.md {auto[key]}"
    floor = next(r for r in _table("scale-floor.md") if r["dtype"] == "float64")
    dense = next(r for r in _table("scale-dense.md") if r["n"] == "1,000,000" and r["constraints"] == "0")
    assert (dense["per iteration"], dense["sklearn per iteration"]) == \
        (floor["hmrf per iteration"], floor["sklearn per iteration"])


def _raised_names() -> set:
    names = set()
    for path in (ROOT / "hmrf").rglob("*.py"):
        src = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"\braise\s+(?:[\w.]+\.)?(\w+(?:Error|Exception|Exhausted))\b", src))
        names |= set(re.findall(r"warnings\.warn\([^)]*?\b(\w+Warning)\b", src, flags=re.S))
    return names


#: raised for programming errors inside hmrf or by abstract methods, not for a user's input
_INTERNAL = {"NotImplementedError", "AttributeError", "IndexError", "ArgumentTypeError",
             "LookupError",  # the CLI's reading of an estimator's signature (hmrf.commands)
             "ModuleNotFoundError"}  # ModuleNotFoundError: an ImportError, its row


def test_errors_table_lists_every_error_and_warning():
    text = (DOCS / "choosing.md").read_text(encoding="utf-8")
    section = text[text.index("## Errors and warnings"):]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    first = " ".join(row.split("|")[1] for row in rows)
    missing = sorted(n for n in _raised_names() - _INTERNAL if not re.search(rf"\b{n}\b", first))
    assert not missing, f"raised by hmrf but not in the errors table of docs/choosing.md: {missing}"
    for target in re.findall(r"\{class\}`~?([\w.]+)`", first):
        module, _, name = target.rpartition(".")
        assert hasattr(importlib.import_module(module), name), f"{target} is not importable"
    for name in ("ConvergenceWarning", "ConstraintConflictWarning", "KilledWorker", "DataFileError"):
        assert name in first, name


@pytest.mark.parametrize("name", ["ConstraintSearchError", "InfeasibleError", "InconsistentConstraintsError"])
def test_the_errors_the_pages_name_are_importable_from_hmrf(name):
    import hmrf

    assert name in hmrf.__all__
    assert issubclass(getattr(hmrf, name), Exception)
