"""``python -m pytest_autotune show [--device D] [TEST...]``: what ``autotune.json`` holds.

Per device: its key and description, then one row per test: the committed configuration, the
baseline, the tolerance a plain run judges it with under the default rule (from the baseline's
noise; a busy machine's baseline shows here as a large tolerance), the tuning that chose it and the
commit it was measured at. A damaged entry is listed with the error that names it. ``TEST``
selects node ids equal to it or containing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_autotune.commands.entry_text import (
    baseline_text,
    commit_text,
    config_text,
    tolerance_text,
    tuning_text,
)
from pytest_autotune.commands.errors import CommandError
from pytest_autotune.commands.table import text
from pytest_autotune.input_file import not_regular_reason
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.reading import Store

__all__ = ["load", "matches", "show"]


def load(path: Path) -> Store:
    """The store at ``path``; :class:`CommandError` when it is missing, no regular file, or damaged."""
    try:
        reason = not_regular_reason(path)
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file (tune first: pytest --autotune; or pass --file)") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if reason is not None:  # a folder, /dev/zero, a FIFO: say what it is (and never read it)
        raise CommandError(f"{path} {reason}; --file must name an autotune.json file")
    try:
        return Store.load(path)
    except StoreError as exc:
        raise CommandError(str(exc)) from None


def matches(nodeid: str, tests: Sequence[str]) -> bool:
    """Whether ``nodeid`` is selected by ``tests`` (all when empty; equal to or containing one)."""
    return not tests or any(test == nodeid or test in nodeid for test in tests)


def show(path: Path, *, device: str | None = None, tests: Sequence[str] = ()) -> list[str]:
    """The lines ``show`` prints (module docstring); :class:`CommandError` for a missing or damaged
    file, an unknown device, or tests that select nothing."""
    store = load(path)
    devices = store.devices()
    if device is not None and device not in devices:
        known = ", ".join(devices) or "none"
        raise CommandError(f"{path}: no device {device!r} (devices: {known})")
    lines = [f"{path}: {store.count()} entries on {len(devices)} device{'s' if len(devices) != 1 else ''}"]
    shown = 0
    for key in [device] if device is not None else devices:
        selected = [nodeid for nodeid in store.tests(key) if matches(nodeid, tests)]
        if not selected:
            continue
        info = store.device_info(key)
        described = f" ({info['name']})" if info.get("name") and info["name"] not in key else ""
        lines += ["", f"device {key}{described}"]
        rows, damaged = [], []
        entries = store.entries(key)
        for nodeid in selected:
            entry = entries.get(nodeid)
            if entry is None:
                damaged.append(nodeid)
                continue
            baseline = entry.baseline
            rows.append(
                [
                    nodeid,
                    config_text(entry.config),
                    baseline_text(baseline),
                    tolerance_text(baseline) if baseline is not None else "-",
                    tuning_text(entry),
                    commit_text(entry),
                ]
            )
        lines += text(["test", "configuration", "baseline", "tolerance", "tuned", "commit"], rows)
        for nodeid in damaged:
            try:
                store.entry(key, nodeid)
            except ValueError as exc:
                lines.append(f"  damaged: {exc}")
        shown += len(selected)
    if not shown:
        raise CommandError(f"{path}: no entry matches {' '.join(tests)}")
    return lines
