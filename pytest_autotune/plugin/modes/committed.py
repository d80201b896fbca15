"""The configuration a normal run of a tunable test uses, and why (:class:`Committed`).

:func:`pytest_autotune.plugin.modes.check.select_config` chooses it; the plan and the compare worker
carry it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pytest_autotune.entry import StoreEntry

__all__ = ["Committed"]


@dataclass(frozen=True)
class Committed:
    """The configuration a normal run uses and why.

    ``state``: ``committed`` (an up-to-date entry), ``missing`` (no entry for this device: the
    declared defaults) or ``stale`` (the declaration changed since tuning: the committed
    configuration when still valid, else the defaults).
    """

    state: Literal["committed", "missing", "stale"]
    config: dict[str, Any]
    entry: StoreEntry | None
    reason: str = ""
