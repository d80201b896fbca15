"""Warnings that point at the user's test, not at the plugin's line that issues them.

A warning issued with ``warnings.warn`` inside the plugin names the plugin's source file and line
in pytest's warnings summary; the user looks for their test. :func:`warn_at_test` issues it at the
test's definition (its file and line as pytest reports them).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pytest_autotune.warning_types import warn

if TYPE_CHECKING:
    import pytest

__all__ = ["definition_site", "warn_at_test"]


def definition_site(item: pytest.Item) -> tuple[str, int]:
    """The file and (1-based) line of the test's definition, as pytest reports it."""
    path, line, _ = item.reportinfo()
    return os.fspath(path), (line or 0) + 1


def warn_at_test(item: pytest.Item, warning: Warning) -> None:
    """Issue ``warning`` at the definition of ``item`` (under ``-W error`` kept as the test's
    failure: :func:`pytest_autotune.warning_types.warn`)."""
    warn(warning, site=definition_site(item))
