"""Numerically stable special functions that SciPy does not provide directly."""

from __future__ import annotations

import numpy as np
from scipy.special import ive

__all__ = ["log_bessel_iv"]


def _log_iv_debye(nu, x):
    """Uniform asymptotic (Debye) expansion of log I_nu(x) for large nu (Abramowitz &
    Stegun 9.7.7), with the first two correction terms."""
    z = x / nu
    s = np.sqrt(1.0 + z * z)
    t = 1.0 / s
    eta = s + np.log(z / (1.0 + s))
    u1 = (3.0 * t - 5.0 * t**3) / 24.0
    u2 = (81.0 * t**2 - 462.0 * t**4 + 385.0 * t**6) / 1152.0
    return -0.5 * np.log(2.0 * np.pi * nu) + nu * eta - 0.5 * np.log(s) + np.log1p(u1 / nu + u2 / nu**2)


def log_bessel_iv(nu, x):
    """``log I_nu(x)`` for ``nu >= 0``, ``x > 0``, without overflow or underflow.

    Uses SciPy's exponentially scaled ``ive`` where it is representable
    (``log I = log ive + x``) and the Debye expansion where ``ive`` underflows, which
    happens for the large orders ``nu = d/2 - 1`` of high-dimensional text.
    """
    nu, x = np.broadcast_arrays(np.asarray(nu, dtype=np.float64), np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        v = ive(nu, x)
        out = np.log(v) + x
    bad = ~np.isfinite(out) | (v < 1e-280)
    if np.any(bad):
        nb = np.maximum(nu[bad], 1e-12)
        out = np.array(out, dtype=np.float64)
        out[bad] = _log_iv_debye(nb, x[bad])
    return out
