"""The layers of ARCHITECTURE.md hold: no module of hmrf imports a module of a higher layer,
at module level or inside a function."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hmrf"

#: module path prefix (dotted, relative to hmrf) -> layer, as listed in ARCHITECTURE.md;
#: the longest matching prefix wins.
LAYERS = {
    "_validation": 0, "_params": 0, "_blocks": 0, "_pairs": 0, "_grid": 0, "_lazy": 0,
    "_optional": 0, "_typing": 0, "_numba_cache": 0, "_registry": 0, "exceptions": 0,
    "constraints": 1,
    "emissions": 2,
    "potentials": 3, "graph": 3,
    "model": 4, "interop": 4, "backend": 4,
    "inference": 5,
    "em": 6,
    "initialization": 7,
    "estimators": 8, "distributed": 8,
    "active": 9,
    "metrics": 10, "datasets": 10, "experiments": 10, "testing": 10,
    "classic": 11, "classic.buckshot": 7, "classic.linkage": 7,
    "model_selection": 12, "cli": 12, "__main__": 12, "commands": 12,
    "widgets": 13,
}


def layer_of(dotted: str) -> int | None:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in LAYERS:
            return LAYERS[key]
    return None


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(path: Path):
    """Dotted names (relative to hmrf) of every hmrf module the file imports."""
    return imports_in(path.read_text(), module_name(path), path.name == "__init__.py")


def imports_in(source: str, dotted: str, is_package: bool):
    own = dotted.split(".")
    package = own if is_package else own[:-1]
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "hmrf":
                target = node.module.split(".")[1:]
            else:
                continue
            if node.module is None or not target:
                for alias in node.names:  # from . import x, from .. import y
                    yield node.lineno, ".".join(target + [alias.name])
            else:
                yield node.lineno, ".".join(target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "hmrf" and "." in alias.name:
                    yield node.lineno, alias.name.split(".", 1)[1]


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if module_name(p))


def test_every_module_has_a_layer():
    missing = [module_name(p) for p in MODULES if layer_of(module_name(p)) is None]
    assert not missing, f"modules not placed in a layer of ARCHITECTURE.md: {missing}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_import_from_a_higher_layer(path):
    own = layer_of(module_name(path))
    upward = [(line, name, layer_of(name)) for line, name in imported_modules(path)
              if layer_of(name) is not None and layer_of(name) > own]
    assert not upward, (f"{module_name(path)} (layer {own}) imports a higher layer: "
                        + ", ".join(f"{n} (layer {lay}, line {ln})" for ln, n, lay in upward))


def test_the_checker_sees_upward_imports():
    """The layer test can fail: upward imports in every form are found and placed."""
    source = ("from .estimators import HMRFKMeans\n"
              "def f():\n    from . import cli\n    import hmrf.active.npu\n"
              "from ..widgets.plot import draw\n")
    found = {name for _, name in imports_in(source, "graph", is_package=False)}
    assert {"estimators", "cli", "active.npu"} <= found
    assert [layer_of(n) for n in ("estimators", "cli", "active.npu")] == [8, 12, 9]
    nested = {name for _, name in imports_in(source, "inference.icm", is_package=False)}
    assert "widgets.plot" in nested and layer_of("widgets.plot") == 13
