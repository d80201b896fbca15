"""``python -m pytest_autotune diff REF [--md]``: what changed in ``autotune.json`` since a git ref.

The store as committed at ``REF`` against the file in the working tree, entry by entry (device and
test): entries added and dropped, and for an entry on both sides the parameters whose value changed
(``BS: 64 -> 128``) and the baseline with its change (``100us -> 90us (-10.0%)``). Unchanged entries
are counted, not listed. Printed as a terminal table, or with ``--md`` as a Markdown table for a
pull-request comment. A file absent at ``REF`` reads as empty (every entry added); a damaged file on
either side is an error naming the side.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_autotune.commands.entry_text import baseline_text, config_text, value_text
from pytest_autotune.commands.errors import CommandError
from pytest_autotune.commands.git_file import text_at
from pytest_autotune.commands.show import load
from pytest_autotune.commands.table import markdown, text
from pytest_autotune.entry import Baseline, StoreEntry
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.reading import Store

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
    change = f" ({new.median / old.median - 1:+.1%})" if (old.unit or "s") == (new.unit or "s") else ""
    return f"{value_text(old.median, old.unit)} -> {value_text(new.median, new.unit)}{change}"


def entry_rows(old: Entries, new: Entries) -> tuple[list[list[str]], int]:
    """The rows (device, test, change, configuration, baseline) and how many entries are unchanged."""
    rows, same = [], 0
    for key in sorted(set(old) | set(new)):
        device, nodeid = key
        before, after = old.get(key), new.get(key)
        if key not in old:
            row = [
                "added",
                config_text(after.config) if after else "(damaged)",
                baseline_text(after.baseline if after else None),
            ]
        elif key not in new:
            row = [
                "dropped",
                config_text(before.config) if before else "(damaged)",
                baseline_text(before.baseline if before else None),
            ]
        elif before is None or after is None:
            row = ["damaged" if after is None else "repaired", "", ""]
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
    header = ["device", "test", "change", "configuration", "baseline"]
    if not rows:
        return [title]
    if as_markdown:
        return [f"**{title}**", "", *_markdown(header, rows)]
    return [title, *text(header, rows)]


def _markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    return markdown(header, rows, code_columns=(1,))
