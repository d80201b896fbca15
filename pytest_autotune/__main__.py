"""``python -m pytest_autotune``: command-line tools.

``merge`` a recovery file into ``autotune.json`` (:mod:`pytest_autotune.recovery`); ``show`` and
``diff`` read the store (:mod:`pytest_autotune.commands`). Kept apart from the plugin so that
``pytest`` never imports it.
"""

from __future__ import annotations

import sys

from pytest_autotune.recovery import main

if __name__ == "__main__":
    from pytest_autotune.commands import COMMANDS, OVERVIEW
    from pytest_autotune.commands import main as read_store

    if sys.argv[1:] in ([], ["-h"], ["--help"]):
        print(OVERVIEW)
        sys.exit(0 if sys.argv[1:] else 2)
    sys.exit(read_store(sys.argv[1:]) if sys.argv[1] in COMMANDS else main())
