"""What the user reads about ``--autotune-compare``: the terminal section and the JSON fields.

The terminal section lists, per compared test, the ratio of the working tree's time over REF's
(B/A) with its interval, the blocks measured and the pairs of workers that measured them, the
seconds the comparison took, the verdict and the configuration each side ran (committed, or the
declared defaults and why). An inconclusive verdict that is likely a regression
(:func:`~pytest_autotune.timing.stopping.likely_regression`, ``likely_regression`` in the JSON
detail) is in red and says so. The JSON export (``--autotune-json``) carries the same numbers in
``extra_info["autotune_compare"]`` (:func:`json_fields`), and the details in
``extra_info["autotune_compare_detail"]``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.report.results import AutotuneResult

__all__ = ["configurations", "json_detail", "json_fields", "percent", "ratio_text", "write_compare_section"]

#: The keys of ``extra_info["autotune_compare"]`` (other tools parse them: keep them stable).
JSON_KEYS = ("verdict", "ratio", "low", "high", "blocks", "seconds", "tolerance", "ref")


def percent(ratio: float | None) -> str:
    """``+12.3%`` for a ratio of 1.123; ``-inf%``/``+inf%`` for an open end, ``?`` for none."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return "?"
    if ratio == 0:
        return "-inf%"
    if math.isinf(ratio):
        return "+inf%"
    return f"{(ratio - 1) * 100:+.1f}%"


def ratio_text(compare: dict[str, Any]) -> str:
    """``+3.2% [-1.0%, +7.5%]``: the ratio B/A as a change, and its interval."""
    return f"{percent(compare.get('ratio'))} [{percent(compare.get('low'))}, {percent(compare.get('high'))}]"


def _side(info: dict[str, Any]) -> str:
    if info.get("state") == "committed":
        return "committed"
    return f"default ({info.get('reason') or info.get('state')})"


def configurations(compare: dict[str, Any]) -> str:
    """Which configuration each side ran: ``REF committed {...}, working tree default (why) {...}``."""
    sides = compare.get("sides") or {}
    ref, working = sides.get("ref"), sides.get("working")
    if not ref or not working:
        return ""
    if ref == working:
        return f"both sides {_side(ref)} {ref.get('config')}"
    return f"REF {_side(ref)} {ref.get('config')}, working tree {_side(working)} {working.get('config')}"


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def json_fields(compare: dict[str, Any]) -> dict[str, Any]:
    """``extra_info["autotune_compare"]``: :data:`JSON_KEYS` (an open interval end is null)."""
    return {key: _finite(compare.get(key)) for key in JSON_KEYS}


def json_detail(compare: dict[str, Any]) -> dict[str, Any]:
    """``extra_info["autotune_compare_detail"]``: everything else (commit, sides, procedure, times)."""
    return {key: value for key, value in compare.items() if key not in JSON_KEYS}


def clock_text(compare: dict[str, Any]) -> str:
    """`` on cpu time (wall +48.0%)``: the clock the blocks were judged on and the other clock's
    ratio (empty for a comparison that names no clock, or one that was not measured)."""
    if compare.get("verdict") in (None, "skipped", "failed", "refused"):
        return ""
    clock = compare.get("clock")
    if not clock:
        return ""
    other = compare.get("other_clock") or {}
    ratio = other.get("ratio")
    return f" on {clock} time" + (f" ({other.get('clock')} {ratio - 1:+.1%})" if ratio else "")


def _line(result: AutotuneResult) -> tuple[str, dict[str, bool]]:
    compare = result.compare or {}
    verdict = compare.get("verdict", "?")
    if verdict in ("skipped", "failed", "refused"):
        reason = compare.get("reason") or result.message or "no reason given"
        colour = {"yellow": True} if verdict == "skipped" else {"red": True}
        return f"  {result.nodeid}  {verdict}: {reason}", colour
    shown = "pass (faster)" if compare.get("faster") else verdict
    likely = verdict == "inconclusive" and compare.get("likely_regression")
    if likely:
        shown = "inconclusive: LIKELY REGRESSION, not confirmed within the time cap"
    tolerance = compare.get("tolerance") or 0.0
    pairs = len(compare.get("pairs") or ())
    text = (
        f"  {result.nodeid}  {ratio_text(compare)}  {compare.get('blocks')} blocks  {pairs} pairs  "
        f"{compare.get('seconds', 0):.1f}s  tolerance {tolerance:.0%}  {shown}  [{configurations(compare)}]"
    )
    colour = {"regression": {"red": True}, "inconclusive": {"yellow": True}}.get(verdict, {})
    return text, {"red": True} if likely else colour


def write_compare_section(tr: pytest.TerminalReporter, results: list[AutotuneResult]) -> None:
    """The terminal section of a comparison run (nothing when no test was compared)."""
    compared = [r for r in results if r.mode == "compare"]
    if not compared:
        return
    details = next((r.compare for r in compared if r.compare and r.compare.get("commit")), None) or {}
    ref = (compared[0].compare or {}).get("ref", "?")
    commit = f" ({details['commit'][:12]})" if details.get("commit") else ""
    tr.write_sep("-", f"autotune: working tree (B) vs {ref}{commit} (A): ratio of times B/A, 95% interval")
    for note in details.get("notes", []):
        tr.write_line(f"note: {note}", yellow=True)
    for result in compared:
        text, colour = _line(result)
        tr.write_line(text, **colour)
        if clock_text(result.compare or {}):
            tr.write_line(f"    judged{clock_text(result.compare or {})}")
