"""What the run-time reader answers: the configuration to launch, and where it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_autotune.runtime.devices import DeviceLevel

__all__ = ["Choice", "SizeMatch"]

#: Where the configuration came from: the size matched ``exact``ly, the ``nearest`` one, the kernel
#: has no key (``unkeyed``), or nothing matched (``default``).
SizeMatch = Literal["exact", "nearest", "unkeyed", "default"]


@dataclass(frozen=True)
class Choice:
    """The configuration to launch and where it came from.

    ``device`` and ``entry`` (test id) name the stored entry used, ``key`` its problem-size key
    (None when the kernel has none); all three are None when ``size_match`` is ``"default"``.
    ``device_match`` is ``"exact"``, ``"architecture"``, ``"vendor"`` or ``"default"``.
    ``asked`` is the application's key and ``distance`` how far the stored key is from it (the sum
    of ``|log2(asked / stored)|`` over the key, 0 for the same key; None without a key or entry).
    """

    config: Mapping[str, Any]
    kernel: str
    device_match: DeviceLevel | Literal["default"]
    size_match: SizeMatch
    device: str | None = None
    entry: str | None = None
    key: Mapping[str, Any] | None = None
    where: str = "the declared default"
    asked: Mapping[str, Any] | None = None
    distance: float | None = None

    @property
    def reason(self) -> str:
        """Why this configuration, in words (what the fallback log says)."""
        if self.size_match == "default":
            return f"kernel {self.kernel!r}: no stored entry fits; the declared default"
        device = {
            "exact": "this device",
            "architecture": "the same architecture",
            "vendor": "the same vendor and kind",
        }.get(self.device_match, "")
        size = {
            "exact": f"the same key {dict(self.key or {})}",
            "nearest": f"the nearest key {dict(self.key or {})}"
            + (
                f", {self.distance:.2f} doublings from {dict(self.asked or {})}"
                if self.distance is not None
                else ""
            ),
            "unkeyed": "no key",
        }[self.size_match]
        return f"kernel {self.kernel!r}: {self.where} ({device}, {size})"
