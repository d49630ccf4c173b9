"""Keep numba's on-disk cache of a module's kernels in step with the modules they call.

numba (``@njit(cache=True)``) keys a module's cached machine code on that module's own
source file only (its modification time and size). A kernel that calls a compiled
function of another module, or reads a constant of another module, has that code
compiled into it; when only the other module changes (an upgrade in place, an edit),
numba still loads the old machine code. :func:`refresh` closes the gap: a module calls
it at import, naming the modules its kernels depend on, and the module's cache entries
are dropped whenever one of them has changed since they were written.
"""

from __future__ import annotations

import glob
import os

__all__ = ["refresh"]


def _stamp(paths) -> str:
    """What numba compares for a source file, for each of ``paths``: its modification
    time (ns) and size."""
    parts = []
    for path in paths:
        st = os.stat(path)
        parts.append(f"{os.path.basename(path)}:{st.st_mtime_ns}:{st.st_size}")
    return "\n".join(parts)


def refresh(module_file: str, *dependencies: str) -> bool:
    """Drop the numba cache of ``module_file`` when a file in ``dependencies`` changed.

    The stamp of the dependencies (modification time and size of each, numba's own
    test for a source file) is kept beside the cache in ``__pycache__/<module>.deps``;
    when it differs from the files' (or is missing), the module's ``.nbi`` index and
    ``.nbc`` data files are removed, so the kernels are compiled again on first use.
    Best effort: a read-only install (where numba caches elsewhere, or not at all) is
    left as it is.

    Parameters
    ----------
    module_file : str
        ``__file__`` of the module whose kernels are cached.
    *dependencies : str
        ``__file__`` of every module whose compiled functions or constants its kernels
        use.

    Returns
    -------
    bool
        Whether cache entries were dropped.
    """
    folder = os.path.join(os.path.dirname(os.path.abspath(module_file)), "__pycache__")
    name = os.path.splitext(os.path.basename(module_file))[0]
    stamp_file = os.path.join(folder, f"{name}.deps")
    try:
        stamp = _stamp(dependencies)
    except OSError:  # a dependency without a source file: nothing to compare
        return False
    try:
        with open(stamp_file, encoding="utf-8") as f:
            if f.read() == stamp:
                return False
    except OSError:
        pass
    dropped = False
    try:
        for path in glob.glob(os.path.join(glob.escape(folder), f"{glob.escape(name)}.*.nb[ic]")):
            try:
                os.remove(path)
                dropped = True
            except FileNotFoundError:  # another process dropped it first
                pass
        os.makedirs(folder, exist_ok=True)
        tmp = f"{stamp_file}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(stamp)
        os.replace(tmp, stamp_file)
    except OSError:
        return dropped
    return dropped
