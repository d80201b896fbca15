"""What one comparison of ``--autotune-compare`` comes to: the test's result, built once.

A comparison (:func:`pytest_autotune.plugin.compare.mode.compare_item`) ends in one of three ways:
skipped (nothing to compare: a new test, REF cannot run it), failed (the working tree's test cannot
run, or a side would not run its own tree's code: :func:`side_failure`), or judged by its pairs of
workers (:func:`judged`: the ratio B/A with its interval, and what an inconclusive verdict would
need). :class:`Comparison` holds what every ending shares and builds the
:class:`~pytest_autotune.plugin.report.results.AutotuneResult` in one call, with the ``compare``
detail the report reads (:mod:`pytest_autotune.plugin.compare.report`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_autotune.plugin.compare.clocks import judged_clock
from pytest_autotune.plugin.compare.pair import PairRun, SideTimes
from pytest_autotune.plugin.compare.report import percent
from pytest_autotune.plugin.report.results import AutotuneResult, ItemOutcome, State
from pytest_autotune.timing.measure import Stats
from pytest_autotune.timing.paired import PairedVerdict, blocks_to_decide, hodges_lehmann
from pytest_autotune.timing.pairs import pair_effects
from pytest_autotune.timing.stopping import MIN_PAIRS, PROCESS_BIAS, likely_regression
from pytest_autotune.warning_types import AutotuneInconclusiveWarning, AutotuneRegressionWarning, warn

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.compare.messages import SideSetup
    from pytest_autotune.plugin.compare.side import SideError
    from pytest_autotune.policy import Policy

__all__ = ["Comparison", "judged", "side_failure"]


def _side_info(setup: SideSetup) -> dict[str, Any]:
    return {"config": setup.config, "state": setup.state, "reason": setup.reason}


def _describe_side(name: str, info: dict[str, Any]) -> str:
    what = "committed" if info["state"] == "committed" else f"{info['state']}: {info['reason']}"
    return f"{name} {info['config']} ({what})"


@dataclass
class Comparison:
    """One test's comparison under way: the test, when it started, and the working tree's configuration
    as the last pair of workers set it up. Each way it ends builds the test's result in one call."""

    item: pytest.Item
    device: str
    policy: Policy
    ref: str
    started: float
    config: dict[str, Any] = field(default_factory=dict)

    def seconds(self) -> float:
        """The comparison's time so far."""
        return time.monotonic() - self.started

    def outcome(
        self,
        state: State,
        message: str,
        compare: dict[str, Any],
        *,
        failure: str | None = None,
        skip: str | None = None,
        **parts: Any,
    ) -> ItemOutcome:
        """The outcome: the result (``compare``: its detail besides ``ref``; ``parts``: its other
        fields), failing the test with ``failure`` or skipping it with ``skip``."""
        params = getattr(getattr(self.item, "callspec", None), "params", {})
        result = AutotuneResult(
            nodeid=self.item.nodeid,
            name=self.item.name,
            device=self.device,
            mode="compare",
            state=state,
            config=dict(self.config),
            unit=self.policy.unit,
            params={k: repr(v) for k, v in params.items()},
            message=message,
            compare={"ref": self.ref, **compare},
            **parts,
        )
        return ItemOutcome(result, failure, skip)

    def skipped(self, reason: str) -> ItemOutcome:
        """The test is skipped: nothing to compare, ``reason`` says why."""
        detail = {"verdict": "skipped", "reason": reason, "seconds": round(self.seconds(), 3)}
        return self.outcome("skipped", reason, detail, skip=reason)

    def failed(self, state: Literal["failed", "refused"], reason: str, detail: str) -> ItemOutcome:
        """The test fails: ``state`` (``failed``, ``refused``), ``reason`` in one line, ``detail`` in full."""
        failure = f"{reason}\n{detail}" if detail and detail != reason else reason
        compare = {"verdict": state, "reason": reason, "seconds": round(self.seconds(), 3)}
        return self.outcome(state, reason, compare, failure=failure)


def _pair_summaries(pairs: list[PairRun], verdict: PairedVerdict, maximize: bool) -> list[dict[str, Any]]:
    """Each pair's own estimate (``ratio``, as the verdict reads it) and its blocks, for the report."""
    summaries: list[dict[str, Any]] = []
    for pair in pairs:
        a, b = (pair.times.b, pair.times.a) if maximize else (pair.times.a, pair.times.b)
        ratio: float | None = None  # None, not nan, in JSON: a pair the time cap left without blocks
        if a:
            effect = hodges_lehmann(pair_effects([(a, b)], verdict.scale)[0]).estimate
            ratio = 1 + effect if verdict.scale is not None else math.exp(effect)
        summaries.append({"ratio": ratio, "blocks": len(a)})
    return summaries


#: Why a test REF cannot run is not compared, by the kind of the REF side's error.
_REF_REASONS: Final = {
    "missing": "new test",
    "not-tunable": "not compared: not a @tunable test at REF",
    "collection": "not compared: its file does not collect at REF",
    "store": "not compared: REF's autotune.json cannot be read",
    "failed": "not compared: cannot run it at REF",
}


def _first_line(text: str) -> str:
    """The first line of a side's message, without the announcement of the worker's output below it."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), text.strip())
    return line.removesuffix("; its output:")


def side_failure(comparison: Comparison, exc: SideError, ref_side: str) -> ItemOutcome:
    """What a side that cannot be measured means for the test (module docstring)."""
    if exc.kind == "unfaithful":
        return comparison.failed("refused", f"cannot compare: {exc}", "")
    if exc.side == ref_side:
        why = _REF_REASONS.get(exc.kind, _REF_REASONS["failed"])
        said = str(exc) if exc.kind == "missing" else exc.message  # new test: REF main: no such test there
        return comparison.skipped(f"{why}: {_first_line(said)}")
    if exc.ended is not None:
        exc.ended.raise_again()
    reason = f"cannot run the working tree's test: {_first_line(exc.message)}"
    return comparison.failed("failed", reason, exc.message)


def _how_to_decide(verdict: PairedVerdict, pairs: int, seconds: float) -> str:
    """What an inconclusive verdict would need, from the spread its pairs and blocks measured."""
    judged = verdict.pairs if verdict.blocks else 0
    if judged < MIN_PAIRS:
        per_pair = seconds / max(pairs, 1)
        cap = max(10, math.ceil(max(2 * seconds, per_pair * (MIN_PAIRS + 1)) / 10) * 10)
        return (
            f"the time cap allowed {judged} judged pair{'s' if judged != 1 else ''} of workers; fewer "
            f"than {MIN_PAIRS} decide only a change beyond the tolerance by more than the "
            f"{PROCESS_BIAS:.0%} two processes may differ: --autotune-compare-max-time={cap}"
        )
    blocks = blocks_to_decide(verdict)
    if blocks is None:
        if verdict.bounded:
            return (
                "the ratio sits at the tolerance, where no length of measuring decides: "
                "set the tolerance the change must meet (--autotune-compare-tolerance)"
            )
        return "measure longer with --autotune-compare-max-time"
    factor = blocks / max(verdict.blocks, 1)  # more pairs of the same blocks each: time grows alike
    needed = factor * seconds
    return (
        f"at this spread about {math.ceil(factor * judged)} pairs of workers ({blocks} blocks) would decide "
        f"it: --autotune-compare-max-time={max(10, math.ceil(needed / 10) * 10)}"
    )


def judged(
    comparison: Comparison,
    pairs: list[PairRun],
    verdict: PairedVerdict,
    *,
    commit: str,
    notes: list[str],
    strict: bool,
    cap: str,
) -> ItemOutcome:
    """The outcome of a comparison its pairs of workers decided, or that the time cap ``cap`` ended
    (module docstring of :mod:`pytest_autotune.plugin.compare.mode`, "Verdict"); ``strict``:
    ``--autotune-compare-strict``, ``notes``: what the report says once."""
    seconds, first, policy = comparison.seconds(), pairs[0], comparison.policy
    nodeid, likely = comparison.item.nodeid, likely_regression(verdict)
    clocks = judged_clock(pairs)
    times = SideTimes([t for p in pairs for t in p.times.a], [t for p in pairs for t in p.times.b])
    sides = {"ref": _side_info(first.setups[0]), "working": _side_info(first.setups[1])}
    state = verdict.state
    summaries = _pair_summaries(pairs, verdict, policy.maximize)
    compare = {
        "verdict": state,
        "ratio": verdict.ratio,
        "low": verdict.low,
        "high": verdict.high,
        "blocks": verdict.blocks,
        "seconds": round(seconds, 3),
        "tolerance": verdict.tolerance,
        "confidence": verdict.confidence,
        "faster": verdict.faster,
        "likely_regression": likely,
        "commit": commit,
        "repeat": first.procedure.repeat,
        "warmup": first.procedure.warmup,
        "pairs": summaries,
        "spread": verdict.spread if verdict.spread is not None and math.isfinite(verdict.spread) else None,
        "sides": sides,
        "notes": list(notes),
        "times": {"ref": times.a, "working": times.b},
        "scale": verdict.scale,
        **clocks,
    }
    configs = f"{_describe_side('REF', sides['ref'])}; {_describe_side('working tree', sides['working'])}"
    where = f"{comparison.ref} ({commit[:12]})"
    failure = None
    if state == "regression":
        message = (
            f"slower than {where}: ratio {verdict.describe()}; {configs}.\n"
            "  expected? accept it with a larger tolerance: @tunable(compare_tolerance=...) or "
            "--autotune-compare-tolerance"
        )
        if policy.check == "fail":
            failure = f"performance regression: {message}"
        elif policy.check == "warn":
            warn(AutotuneRegressionWarning(f"{nodeid}: {message}"), stacklevel=2)
    elif state == "inconclusive":
        each = ", ".join(percent(pair["ratio"]) for pair in summaries)
        interval = f"{percent(verdict.ratio)} [{percent(verdict.low)}, {percent(verdict.high)}]"
        headline = (
            f"likely regression: {interval} against {where} (tolerance {verdict.tolerance:.0%}), not "
            f"confirmed within {cap}; raise --autotune-compare-max-time. Comparison"
            if likely
            else f"comparison with {where}"
        )
        message = (
            f"{headline} inconclusive after {seconds:.0f}s: ratio {verdict.describe()}; "
            f"each pair of workers found {each}; {configs}; {_how_to_decide(verdict, len(pairs), seconds)}"
        )
        if strict:
            failure = f"{message} (--autotune-compare-strict)"
        else:
            warn(AutotuneInconclusiveWarning(f"{nodeid}: {message}"), stacklevel=2)
    else:
        message = f"ratio {verdict.describe()}; {configs}"
    unit = policy.unit
    return comparison.outcome(
        "faster" if verdict.faster else "passed" if state == "pass" else state,
        message,
        compare,
        failure=failure,
        stats=Stats.of(times.b).to_dict() if times.a else None,
        baseline=Stats.of(times.a).baseline(unit) if times.a else None,
        clock=clocks["clock"],
    )
