"""``python -m hmrf``: the ``hmrf`` command (:mod:`hmrf.cli`)."""

import sys

from .cli import main

sys.exit(main())
