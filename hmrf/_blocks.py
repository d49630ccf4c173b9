"""Row blocks: how every pass over the data bounds its temporaries.

A pass that needs an (n, k) or (n, d) temporary works on blocks of rows instead, so at
most one block of such temporaries exists at a time and memory stays linear in n with a
small constant (ARCHITECTURE.md, "One fit, step by step"). The block size is a trade-off: large enough that
NumPy's per-call overhead is negligible, small enough to stay in cache-sized memory.
"""

from __future__ import annotations

__all__ = ["BLOCK_ELEMENTS", "block_rows", "row_blocks"]

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
