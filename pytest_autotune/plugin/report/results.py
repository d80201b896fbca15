"""The result of one tunable test, as it travels from the process that ran it to the one that reports.

A run mode builds a test's result once, whole (frozen), and hands it over with the test's fate in
an :class:`ItemOutcome`. A result is attached to the test report as the user property ``autotune``
(a JSON text), so it reaches the xdist controller with the report and lands in JUnit XML unchanged.
The controller (or the single process) collects results from reports only, whether xdist runs or not.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, get_args

from pytest_autotune.entry import StoreEntry

__all__ = ["PROPERTY", "STATES", "AutotuneResult", "ItemOutcome", "from_user_properties"]

#: Name of the user property carrying a result.
PROPERTY: Final = "autotune"

State = Literal[
    "tuned",  # tune mode chose a configuration (entry written when the test passed)
    "passed",  # normal run within the noise band of the baseline
    "regression",  # slower than the baseline beyond the band (confirmed)
    "faster",  # faster than the baseline beyond the band
    "missing",  # no entry for this device: the declared defaults ran
    "stale",  # the declaration changed since tuning
    "unchecked",  # timing not judged (check off, shared device, no baseline)
    "unmeasured",  # the body never measured
    "baseline-updated",  # --autotune-update-baseline re-measured the baseline
    "tune-failed",  # tuning found no usable configuration (the test failed)
    "inconclusive",  # --autotune-compare: the interval still straddles the tolerance at the time cap
    "skipped",  # --autotune-compare: nothing to compare (e.g. a new test, absent at the reference)
    "failed",  # --autotune-compare: the working tree's test cannot run (an exception, a crash, a hang)
    "refused",  # --autotune-compare: a side would not run its own tree's code (the gate cannot see)
]
STATES: Final[tuple[State, ...]] = get_args(State)


@dataclass(frozen=True)
class AutotuneResult:
    """What happened to one tunable test in this run (built once, by its run mode, and never changed).

        ``stats`` summarises this run's measurement (see :class:`pytest_autotune.timing.measure.Stats`);
        ``baseline`` is the committed baseline it was compared with; ``entry`` is the store entry to
        write (tune mode and baseline updates) without ``commit_info``, which the writer adds, and
        ``device_info`` the device's description for the store's ``info`` block; ``isolation`` counts the
    trial worker's starts, crashes, timeouts and memory restarts when trials ran isolated;
    ``pruned`` what the device's limits removed from the space before tuning
    (:meth:`pytest_autotune.backends.launch_limits.Pruned.to_dict`).
    ``warm_start`` says which sources a warm-started tuning run used.
    trial worker's starts, crashes, timeouts and memory restarts when trials ran isolated; ``compare``
    is the outcome of ``--autotune-compare`` (:func:`pytest_autotune.plugin.compare.mode.compare_item`).
    ``tolerance`` is the one a check applied (derived from the baseline's noise unless set), on
    the ``clock`` that judged: ``stats`` and ``baseline`` hold both clocks (their ``cpu`` parts).
    """

    nodeid: str
    name: str
    device: str
    mode: str
    state: State
    config: dict[str, Any]
    unit: str = "s"
    params: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    limit: float | None = None
    noise_band: float | None = None
    tolerance: float | None = None
    message: str = ""
    entry: StoreEntry | None = None
    speedup: float | None = None
    #: ``speedup`` is a lower bound: the default was measured only until it was clearly outclassed.
    speedup_at_least: bool = False
    tuning: dict[str, Any] | None = None
    device_info: dict[str, Any] | None = None
    isolation: dict[str, Any] | None = None
    #: Named metrics (``autotune.metric``) at the reported median.
    metrics: dict[str, float] | None = None
    #: The search (:class:`pytest_autotune.plugin.report.search_trace.SearchTrace` as JSON) of a tuned test.
    search: dict[str, Any] | None = None
    pruned: dict[str, Any] | None = None
    warm_start: str | None = None
    compare: dict[str, Any] | None = None
    #: The clock a check judged on (``wall``/``cpu``, :mod:`pytest_autotune.timing.clock`), why not
    #: the one asked for, and the parallelism guard's verdict on the CPU clock (state and message).
    clock: str | None = None
    clock_note: str = ""
    parallelism: dict[str, Any] | None = None

    def to_json(self) -> str:
        """Compact JSON text (the user property's value)."""
        data = asdict(self)
        data["entry"] = self.entry.to_json() if self.entry is not None else None
        return json.dumps(data, sort_keys=True, separators=(",", ":"), default=repr)

    @classmethod
    def from_json(cls, text: str) -> AutotuneResult:
        """Inverse of :meth:`to_json` (the entry is validated as the store would validate it)."""
        data = json.loads(text)
        entry = data.pop("entry", None)
        if entry is not None:
            entry = StoreEntry.from_json(entry, where=f"the result of {data.get('nodeid')}")
        return cls(**data, entry=entry)


@dataclass(frozen=True)
class ItemOutcome:
    """What a run mode made of one test (:mod:`pytest_autotune.plugin.modes.run_mode`): its ``result``,
    and the reason the test fails (``failure``) or is skipped (``skip``), None when it does neither.

    :func:`~pytest_autotune.plugin.modes.run_mode.conclude` attaches the result to the test's report
    first, then skips or fails the test, so the summary and the store see every result.
    """

    result: AutotuneResult
    failure: str | None = None
    skip: str | None = None


def from_user_properties(properties: Any) -> AutotuneResult | None:
    """The result among a report's user properties, or None."""
    for name, value in properties or ():
        if name == PROPERTY and isinstance(value, str):
            return AutotuneResult.from_json(value)
    return None
