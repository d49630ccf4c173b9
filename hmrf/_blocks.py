"""Row blocks: how every pass over the data bounds its temporaries.

A pass that needs an (n, k) or (n, d) temporary works on blocks of rows instead, so at
most one block of such temporaries exists at a time and memory stays linear in n with a
small constant (ARCHITECTURE.md, "One fit, step by step"). The block size is a trade-off: large enough that
NumPy's per-call overhead is negligible, small enough to stay in cache-sized memory.

Large passes run their blocks on one pool of threads per process (NumPy's reductions
and the compiled kernels release the GIL): :func:`map_row_blocks` for the reductions
over ``X`` at a fit's entrance, ``hmrf.em.passes.run_blocks`` for the E-step passes.
"""

from __future__ import annotations

import os

__all__ = ["BLOCK_ELEMENTS", "MAX_THREADS", "MIN_THREADED_ENTRIES", "block_rows", "in_pool_thread",
           "map_on_pool", "map_row_blocks", "pool_threads", "row_blocks", "thread_pool"]

#: Size of one block's (rows x width) temporaries, in elements.
BLOCK_ELEMENTS = 2**18


def block_rows(n_samples: int, width: int) -> int:
    """Rows per block for temporaries of ``width`` columns (at least 256)."""
    return int(min(max(n_samples, 1), max(256, BLOCK_ELEMENTS // max(int(width), 1))))


def row_blocks(n_samples: int, width: int):
    """``slice`` objects covering ``range(n_samples)`` in blocks of :func:`block_rows`."""
    step = block_rows(n_samples, width)
    for start in range(0, n_samples, step):
        yield slice(start, min(start + step, n_samples))


#: Threads that work on row blocks at once (each block's BLAS call then runs on one
#: thread, as scikit-learn's Lloyd loop does with OpenMP over chunks).
MAX_THREADS = 8
#: Passes over fewer data entries (rows x columns) than this run on the calling thread:
#: for them, handing blocks to threads costs more than it saves.
MIN_THREADED_ENTRIES = 2**22

_THREADING: dict = {}
_PREFIX = "hmrf-pass"


def pool_threads(entries: int) -> int:
    """Threads a pass over ``entries`` data entries runs on: ``min(cores, MAX_THREADS)``,
    1 below ``MIN_THREADED_ENTRIES``."""
    if entries < MIN_THREADED_ENTRIES:
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))


def thread_pool(n_threads: int):
    """A pool of ``n_threads`` threads and a BLAS thread-limit controller, made once per
    process and reused by every pass."""
    if _THREADING.get("n") != n_threads:
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import ThreadpoolController

        _THREADING.update(n=n_threads, pool=ThreadPoolExecutor(n_threads, thread_name_prefix=_PREFIX),
                          controller=ThreadpoolController())
    return _THREADING["pool"], _THREADING["controller"]


def in_pool_thread() -> bool:
    """Whether the calling thread is one of the pass pool's: such a thread runs a map's
    items itself, since waiting on its own pool could leave no thread to run them."""
    import threading

    return threading.current_thread().name.startswith(_PREFIX)


def map_on_pool(work, items, n_threads: int | None = None) -> list:
    """``work(item)`` for every item, results in item order: on the pass's pool of
    ``n_threads`` threads (default ``min(cores, MAX_THREADS)``), on the calling thread
    when that is 1."""
    n_threads = pool_threads(MIN_THREADED_ENTRIES) if n_threads is None else n_threads
    if n_threads == 1 or in_pool_thread():  # a pool thread waiting on its own pool could deadlock it
        return [work(it) for it in items]
    pool, _ = thread_pool(n_threads)
    return [f.result() for f in [pool.submit(work, it) for it in items]]


def map_row_blocks(work, n_samples: int, width: int) -> list:
    """``work(rows)`` for the row blocks of an (n_samples, width) pass (:func:`row_blocks`),
    results in block order: a reduction over a large dense ``X`` reads it on every core."""
    return map_on_pool(work, list(row_blocks(n_samples, width)), pool_threads(n_samples * width))
