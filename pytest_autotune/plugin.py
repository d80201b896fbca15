"""pytest plugin entry point (``pytest11``: ``autotune``).

Imports nothing heavy at module level: a plain ``pytest`` run must stay fast.
The full plugin (options, fixtures, tune and check modes) lands with issue 5.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``autotune`` marker so ``--strict-markers`` accepts it."""
    config.addinivalue_line("markers", "autotune(**policy): a tunable kernel test (added by @tunable)")
