"""The parameter checks of :mod:`hmrf._validation`, under the name the engines import."""

from ._validation import Check, Interval, Options, describe, validate_params

__all__ = ["Interval", "Options", "Check", "validate_params", "describe"]
