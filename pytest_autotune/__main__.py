"""``python -m pytest_autotune``: command-line tools (``merge`` a recovery file into ``autotune.json``).

Kept apart from the plugin so that ``pytest`` never imports it; see :mod:`pytest_autotune.recovery`.
"""

from __future__ import annotations

import sys

from pytest_autotune.recovery import main

if __name__ == "__main__":
    sys.exit(main())
