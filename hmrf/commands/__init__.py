"""Sub-commands of the ``hmrf`` command line (see :mod:`hmrf.cli`)."""
