"""The progress bar of the experiment drivers (tqdm, when it is installed)."""

from __future__ import annotations

from .._optional import available


def progress_bar(total: int, progress, default: str, unit: str):
    """A tqdm bar of ``total`` steps, or None when ``progress`` is false or tqdm is missing.

    ``progress`` may be a string: the bar's name (what runs, e.g. ``"compare: iris"``).
    """
    if not progress:
        return None
    if not available("tqdm.auto"):
        return None
    from tqdm.auto import tqdm

    desc = progress if isinstance(progress, str) else default
    return tqdm(total=total, desc=desc, unit=unit)
