"""numba's disk cache follows the modules a kernel compiles in (``hmrf._numba_cache``)."""

import os
import subprocess
import sys
import textwrap

import pytest

from hmrf._numba_cache import refresh

pytest.importorskip("numba")

CALLEE = """
import numba

@numba.njit(cache=True)
def value():
    return {value}
"""

CALLER = """
import numba
from . import callee
{refresh}

@numba.njit(cache=True)
def result():
    return callee.value()
"""


def _package(root, value, with_refresh):
    pkg = root / "kernels"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    callee = pkg / "callee.py"
    # numba compares modification time and size: a new value of another length
    # and a new time, as an edit or an upgrade in place gives
    callee.write_text(textwrap.dedent(CALLEE.format(value=value)))
    st = os.stat(callee)
    os.utime(callee, ns=(st.st_atime_ns, st.st_mtime_ns + value * 1_000_000_000))
    call = ("from hmrf._numba_cache import refresh\nrefresh(__file__, callee.__file__)"
            if with_refresh else "")
    caller = pkg / "caller.py"
    if not caller.exists():
        caller.write_text(textwrap.dedent(CALLER.format(refresh=call)))


def _run(root):
    out = subprocess.run([sys.executable, "-c", "from kernels.caller import result; print(result())"],
                         cwd=root, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path])))
    return int(out.stdout.strip())


@pytest.mark.parametrize("with_refresh", [False, True])
def test_a_changed_callee_is_compiled_again(tmp_path, with_refresh):
    """Without :func:`refresh` numba keeps the caller's machine code compiled with the
    callee's old body (the hazard); with it the caller sees the callee's new value."""
    _package(tmp_path, 1, with_refresh)
    assert _run(tmp_path) == 1
    _package(tmp_path, 23, with_refresh)
    assert _run(tmp_path) == (23 if with_refresh else 1)
    assert _run(tmp_path) == (23 if with_refresh else 1)


def test_refresh_drops_only_on_a_change(tmp_path):
    """Cache files of the module go when a dependency's stamp changes, not otherwise;
    files of other modules stay."""
    dep = tmp_path / "dep.py"
    dep.write_text("x = 1\n")
    mod = tmp_path / "mod.py"
    mod.write_text("")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    own, other = cache / "mod.f-3.py311.nbi", cache / "other.f-3.py311.nbi"
    own.write_text(""), other.write_text("")
    assert refresh(str(mod), str(dep)) and not own.exists() and other.exists()
    own.write_text("")
    assert not refresh(str(mod), str(dep)) and own.exists()
    dep.write_text("x = 22\n")
    assert refresh(str(mod), str(dep)) and not own.exists() and other.exists()
