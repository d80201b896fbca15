"""``python -m pytest_autotune diff REF [--md]``: what changed in ``autotune.json`` since a git ref.

The store as committed at ``REF`` against the file in the working tree, entry by entry (device and
test): entries added and dropped, and for an entry on both sides the parameters whose value changed
(``BS: 64 -> 128``) and the baseline with its change (``100us -> 90us (-10.0%)``), said to lie within
or beyond the tolerance a plain run judged the old baseline with, so that a change inside the noise
does not read as a regression. Each row gives the tolerance (and noise) of its baseline and why the
entry changed (``declaration changed``, ``tuned again``, ``baseline re-measured``, ``new device``,
...). Unchanged entries are counted, not listed. Printed as a terminal table, or with ``--md`` as
Markdown for a pull-request comment, one table per device under its key. A file absent at ``REF``
reads as empty (every entry added); a damaged file on either side is an error naming the side.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_autotune.commands.entry_text import baseline_text, config_text, tolerance_text, value_text
from pytest_autotune.commands.errors import CommandError
from pytest_autotune.commands.git_file import text_at
from pytest_autotune.commands.show import load
from pytest_autotune.commands.table import code_span, markdown, text
from pytest_autotune.entry import Baseline, StoreEntry
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.reading import Store
from pytest_autotune.timing.regression import Rule

__all__ = ["changed_params", "diff", "entry_rows"]

Entries = dict[tuple[str, str], StoreEntry | None]


def _entries(store: Store) -> Entries:
    """Every entry by (device, test); a damaged one as None."""
    found: Entries = {}
    for device in store.devices():
        valid = store.entries(device)
        for nodeid in store.tests(device):
            found[device, nodeid] = valid.get(nodeid)
    return found


def changed_params(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """``BS: 64 -> 128, WPT: 4 -> 2``; parameters added or removed read ``(none)`` on their empty side."""
    names = [*old, *(name for name in new if name not in old)]
    return ", ".join(
        f"{name}: {old.get(name, '(none)')} -> {new.get(name, '(none)')}"
        for name in names
        if old.get(name, "(none)") != new.get(name, "(none)")
    )


def _baseline_change(old: Baseline | None, new: Baseline | None) -> str:
    if old is None or new is None:
        return f"{baseline_text(old)} -> {baseline_text(new)}"
    if old.median == new.median:
        return baseline_text(new)
    change = ""
    if (old.unit or "s") == (new.unit or "s"):
        ratio = new.median / old.median - 1
        tolerance = Rule().tolerance_for(old)
        where = "within" if abs(ratio) <= tolerance + 1e-9 else "beyond"  # +10.0% of 10%: within
        change = f" ({ratio:+.1%}, {where} the old tolerance {tolerance:.0%})"
    return f"{value_text(old.median, old.unit)} -> {value_text(new.median, new.unit)}{change}"


def _tolerance(entry: StoreEntry | None) -> str:
    """The tolerance (and noise) a plain run judges the entry's baseline with: ``24% (noise 12%)``."""
    return tolerance_text(entry.baseline) if entry is not None and entry.baseline is not None else "-"


def _why_changed(before: StoreEntry, after: StoreEntry) -> str:
    """What differs between two versions of one entry, in the order a reviewer asks."""
    reasons = []
    if before.space_hash != after.space_hash:
        reasons.append("declaration changed (space hash)")
    if before.tuning != after.tuning:
        trials = f" ({after.tuning.trials} trials, {after.tuning.strategy})" if after.tuning else ""
        reasons.append(f"tuned again{trials}")
    elif before.baseline != after.baseline:
        reasons.append("baseline re-measured")
    if dict(before.config) != dict(after.config) and before.tuning == after.tuning:
        reasons.append("configuration edited")
    if not reasons:
        fields = [
            name
            for name in ("metrics", "history", "commit_info", "measured_at")
            if getattr(before, name) != getattr(after, name)
        ]
        reasons.append(", ".join(fields) or "details")
    return "; ".join(reasons)


def entry_rows(old: Entries, new: Entries) -> tuple[list[list[str]], int]:
    """The rows (device, test, change, configuration, baseline, tolerance, why) and how many
    entries are unchanged."""
    rows, same = [], 0
    old_tests, new_tests = {nodeid for _, nodeid in old}, {nodeid for _, nodeid in new}
    for key in sorted(set(old) | set(new)):
        device, nodeid = key
        before, after = old.get(key), new.get(key)
        if key not in old:
            why = "first entry on this device" if nodeid in old_tests else "new test"
            row = [
                "added",
                config_text(after.config) if after else "(damaged)",
                baseline_text(after.baseline if after else None),
                _tolerance(after),
                why,
            ]
        elif key not in new:
            why = "dropped on this device" if nodeid in new_tests else "test gone"
            row = [
                "dropped",
                config_text(before.config) if before else "(damaged)",
                baseline_text(before.baseline if before else None),
                _tolerance(before),
                why,
            ]
        elif before is None or after is None:
            row = ["damaged" if after is None else "repaired", "", "", _tolerance(after), ""]
        elif before.to_json() == after.to_json():
            same += 1
            continue
        else:
            params = changed_params(before.config, after.config)
            what = "re-tuned" if params else "baseline" if before.baseline != after.baseline else "details"
            row = [
                what,
                params or config_text(after.config),
                _baseline_change(before.baseline, after.baseline),
                _tolerance(after),
                _why_changed(before, after),
            ]
        rows.append([device, nodeid, *row])
    return rows, same


def _side(where: str, loaded: bytes | None) -> Store:
    try:
        return Store.parse(Path(where), loaded) if loaded is not None else Store(Path(where))
    except StoreError as exc:
        raise CommandError(f"at {where.split(':')[0]}: {exc}") from None


def diff(path: Path, ref: str, *, as_markdown: bool = False) -> list[str]:
    """The lines ``diff`` prints (module docstring); :class:`CommandError` for a bad ref, a missing
    file, or a damaged one."""
    current = load(path)
    committed, short = text_at(path, ref)
    before = _side(f"{ref}:{path.name}", committed)
    rows, same = entry_rows(_entries(before), _entries(current))
    absent = " (absent there: every entry is new)" if committed is None else ""
    kinds = [row[2] for row in rows]
    added, dropped = kinds.count("added"), kinds.count("dropped")
    counts = f"{added} added, {dropped} dropped, {len(rows) - added - dropped} changed, {same} unchanged"
    title = f"{path} since {ref} ({short}){absent}: {counts}"
    header = ["device", "test", "change", "configuration", "baseline", "tolerance (noise)", "why"]
    if not rows:
        return [title]
    if as_markdown:
        return [f"**{title}**", *_by_device(rows)]
    return [title, *text(header, rows)]


def _by_device(rows: list[list[str]]) -> list[str]:
    """One Markdown table per device, under its key (which no row repeats); the test is the second
    column, where :func:`_markdown` writes it as code."""
    lines: list[str] = []
    header = ["change", "test", "why", "configuration", "baseline", "tolerance (noise)"]
    for device in dict.fromkeys(row[0] for row in rows):
        group = [[r[2], r[1], r[6], r[3], r[4], r[5]] for r in rows if r[0] == device]
        lines += ["", f"Device {code_span(device)}:", ""]
        lines += _markdown(header, group)
    return lines


def _markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    return markdown(header, rows, code_columns=(1,))
