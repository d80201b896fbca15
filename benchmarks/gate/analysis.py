"""Judging the runs of ``benchmarks/gate/bench.py`` by several rules, and the tables it prints.

A check of the absolute mode comes back as the plugin's own verdict plus every measurement the
run took (``benchmarks/gate/project_files/gate_recorder.py``): the plugin's measurements and, after it had
judged, more after the same pauses while today's rule would still have been measuring. So each
rule below is applied to the very measurements it would have seen, with the plugin's own code
(:meth:`pytest_autotune.timing.regression.Rule.judge` on the least disturbed measurement so far,
stopping when the verdict is settled, at most six measurements):

* ``noise rule``: the plugin's rule today (the baseline measured in fresh processes, the tolerance
  derived from its noise unless the test sets one); its offline verdict is compared with the
  plugin's real one (``agrees``);
* ``today's rule``: the rule before this change: the baseline the tuning process measured in
  itself, the plain tolerance;
* ``probe: mem`` / ``probe: compute``: the noise rule with every time divided by the ratio of a
  machine-speed probe (now / at baseline time), taken in the same process just before the test.

A relative-mode check is the verdict of ``--autotune-compare`` (its ``regression`` is an alarm;
``inconclusive`` is not, and is counted apart: for unchanged code the table gives the shares judged
pass, inconclusive and failed, since a gate that never decides is no gate). :func:`targets_rows`
sets the run against the targets of issue 43, and :func:`calibration_rows` resamples the unchanged
absolute checks as baselines to choose the number of baseline processes and the noise multiple.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pytest_autotune.entry import Baseline
from pytest_autotune.timing.measure import least_disturbed
from pytest_autotune.timing.regression import (
    CONFIRMATIONS,
    NOISE_K,
    NOISE_TOLERANCE_K,
    PROCESS_RUNS,
    TIME_FLOOR,
    Rule,
    between_process_noise,
)

__all__ = [
    "Check",
    "KernelBaselines",
    "Measurement",
    "calibration_rows",
    "judge_sequence",
    "kernel_table",
    "recorder_rules",
    "targets_rows",
]

LEVELS: Final = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
#: (mode, level) -> (target rate, at least?) per kernel, from issue 43; "seconds" is the median
#: time per check (per test), "pass" the share of unchanged checks judged pass.
TARGETS: Final = {
    ("absolute", 0.0): (0.0, False),
    ("absolute", 0.1): (0.9, True),
    ("absolute", 1.0): (1.0, True),
    ("relative", 0.0): (0.0, False),
    ("relative", "pass"): (0.9, True),
    ("relative", 0.05): (0.8, True),
    ("relative", 0.1): (0.9, True),
    ("relative", 1.0): (1.0, True),
    ("relative", "seconds"): (20.0, False),
}
#: Unchanged relative checks the "0 false reds" target counts over (pooled over kernels).
FALSE_RED_CHECKS: Final = 50


@dataclass(frozen=True)
class Measurement:
    """One measurement (a call of the body): what the rule reads, and when it ended (wall clock)."""

    median: float
    q1: float
    q3: float
    t1: float = 0.0

    def scaled(self, factor: float) -> Measurement:
        """The measurement with its times multiplied by ``factor``."""
        return Measurement(self.median * factor, self.q1 * factor, self.q3 * factor, self.t1)


@dataclass
class Check:
    """One test in one check run (see the module docstring); times in seconds."""

    mode: str
    level: float
    kernel: str
    round: int
    alarm: bool | None  # the plugin's verdict: a regression (True), a pass (False), an error (None)
    state: str
    seconds: float | None = None  # relative mode: the test's time (junit)
    measurements: list[Measurement] = field(default_factory=list)
    probe: dict[str, float] | None = None
    probe_seconds: float = 0.0
    setup_t0: float | None = None
    compare: dict[str, Any] | None = None


@dataclass
class KernelBaselines:
    """What the absolute mode judges one kernel against (see the module docstring)."""

    new: Baseline
    today: Baseline
    workers: list[tuple[Measurement, dict[str, float] | None]]
    tolerance: float
    explicit: bool


def judge_sequence(
    rule: Rule, baseline: Baseline, measurements: Sequence[Measurement], scale: float = 1.0
) -> tuple[str, int] | None:
    """The state a check reaches, and how many measurements it took; None when it needed more than
    were taken."""
    taken: list[Measurement] = []
    for measurement in measurements[: CONFIRMATIONS + 1]:
        taken.append(measurement.scaled(scale))
        verdict = rule.judge(least_disturbed(taken), baseline)  # type: ignore[arg-type]
        if verdict.settled or len(taken) == CONFIRMATIONS + 1:
            return verdict.state, len(taken)
    return None


def rule_for(tolerance: float, explicit: bool, k: float | None = NOISE_TOLERANCE_K) -> Rule:
    """The plugin's rule for a test (its tolerance; noise-derived unless ``explicit``)."""
    return Rule(tolerance, NOISE_K, TIME_FLOOR, noise_scale=None if explicit else k)


def baseline_of(values: Sequence[Measurement], noise: bool = True) -> Baseline:
    """The baseline that processes measuring ``values`` give: the middle one, with their noise."""
    middle = sorted(values, key=lambda m: m.median)[len(values) // 2]
    spread = between_process_noise([m.median for m in values]) if noise else None
    return Baseline(middle.median, q1=middle.q1, q3=middle.q3, noise=spread, processes=len(values))


def _probe_scale(probe: dict[str, float] | None, reference: float | None, kind: str) -> float | None:
    if probe is None or reference is None or not probe.get(kind):
        return None
    return reference / probe[kind]


def probe_baseline(base: KernelBaselines, kind: str) -> tuple[float, Baseline] | None:
    """The probe's value at baseline time (median of the baseline processes') and the baseline of
    the processes' times divided by their probe ratio; None without a probe in every process."""
    probes = [p[kind] for _, p in base.workers if p and p.get(kind)]
    if len(probes) != len(base.workers) or not probes:
        return None
    reference = statistics.median(probes)
    return reference, baseline_of([m.scaled(reference / p[kind]) for m, p in base.workers if p])


def recorder_rules(base: KernelBaselines) -> list[dict[str, Any]]:
    """The rules the recorder measures on for (``GATE_TODAY``): today's, and the probe variants."""
    rules: list[dict[str, Any]] = [
        {"baseline": base.today.to_json(), "tolerance": base.tolerance, "noise_scale": None, "probe": None}
    ]
    for kind in ("mem", "compute"):
        found = probe_baseline(base, kind)
        if found is not None:
            scale = None if base.explicit else NOISE_TOLERANCE_K
            rules.append(
                {
                    "baseline": found[1].to_json(),
                    "tolerance": base.tolerance,
                    "noise_scale": scale,
                    "probe": [kind, found[0]],
                }
            )
    return rules


def _variants(base: KernelBaselines) -> dict[str, Callable[[Check], tuple[str, int] | None]]:
    """Each absolute-mode rule as a function of a check."""
    plugin_rule = rule_for(base.tolerance, base.explicit)
    today_rule = rule_for(base.tolerance, True)
    variants: dict[str, Callable[[Check], tuple[str, int] | None]] = {
        "noise rule (plugin)": lambda c: judge_sequence(plugin_rule, base.new, c.measurements),
        "today's rule": lambda c: judge_sequence(today_rule, base.today, c.measurements),
    }
    for kind in ("mem", "compute"):
        found = probe_baseline(base, kind)
        if found is None:
            continue

        def judge(
            check: Check, kind: str = kind, found: tuple[float, Baseline] = found
        ) -> tuple[str, int] | None:
            scale = _probe_scale(check.probe, found[0], kind)
            return None if scale is None else judge_sequence(plugin_rule, found[1], check.measurements, scale)

        variants[f"probe: {kind}"] = judge
    return variants


def _rate(hits: int, total: int) -> str:
    return f"{hits / total:.0%} ({hits}/{total})" if total else "-"


def _meets(mode: str, key: float | str, value: float | None) -> str:
    target = TARGETS.get((mode, key))
    if target is None or value is None:
        return ""
    limit, at_least = target
    return "yes" if (value >= limit if at_least else value <= limit) else "NO"


def check_seconds(check: Check, used: int | None) -> float | None:
    """The time a check took up to its ``used``-th measurement (absolute), or its test time (relative)."""
    if check.mode == "relative" or not check.measurements or check.setup_t0 is None:
        return check.seconds
    last = check.measurements[min(used or 1, len(check.measurements)) - 1]
    return last.t1 - check.setup_t0 - check.probe_seconds


def realised(checks: Sequence[Check]) -> dict[float, float]:
    """The slowdown each level realised: the median first measurement (absolute) or the compare
    ratio (relative), over that of the unchanged runs."""

    def first(check: Check) -> float | None:
        if check.mode == "relative":
            return (check.compare or {}).get("ratio")
        return check.measurements[0].median if check.measurements else None

    by_level: dict[float, list[float]] = {}
    for check in checks:
        value = first(check)
        if value is not None:
            by_level.setdefault(check.level, []).append(value)
    if checks and checks[0].mode == "relative":
        return {level: statistics.median(v) - 1 for level, v in by_level.items() if level}
    unchanged = statistics.median(by_level.get(0.0, [0.0])) if by_level.get(0.0) else None
    return {
        level: statistics.median(v) / unchanged - 1 for level, v in by_level.items() if level and unchanged
    }


def kernel_table(
    mode: str, kernel: str, checks: Sequence[Check], base: KernelBaselines | None, k_run: float
) -> tuple[str, list[str], list[list[object]], list[str]]:
    """The rows of one kernel and mode: (title, header, rows, notes); ``k_run`` is the noise multiple
    the plugin ran with (its verdicts are compared with the offline rule of that multiple)."""
    levels = sorted({c.level for c in checks} | {0.0})
    real = realised(checks)
    title = f"{mode} mode, {kernel}: realised slowdown " + ", ".join(
        f"+{level:.0%} -> {real[level]:+.1%}" for level in levels if level in real
    )
    unchanged = "unchanged judged" if mode == "relative" else "unchanged fails"
    header = ["rule", *(f"{unchanged if lv == 0 else f'+{lv:.0%} caught'}" for lv in levels)]
    header += ["median s/check", "target met"]
    verdicts: dict[str, Callable[[Check], tuple[str, int] | None]] = {}
    notes: list[str] = []
    if mode == "absolute" and base is not None:
        verdicts = _variants(base)
        run_rule = rule_for(base.tolerance, base.explicit, k_run)
        judged = [
            (c, judge_sequence(run_rule, base.new, c.measurements)) for c in checks if c.alarm is not None
        ]
        agree = sum((v is not None and (v[0] == "regression") == c.alarm) for c, v in judged)
        notes.append(
            f"offline rule (k={k_run:g}) = plugin verdict in {agree}/{len(judged)} checks; "
            f"tolerance {rule_for(base.tolerance, base.explicit).tolerance_for(base.new):.0%} "
            f"(baseline noise {base.new.noise if base.new.noise is not None else 0:.1%}"
            f"{', set by the test' if base.explicit else ''})"
        )
    else:
        verdicts = {"compare (plugin)": lambda c: None if c.alarm is None else (c.state, 1)}
    rows = []
    for name, verdict in verdicts.items():
        row: list[object] = [name]
        met = []
        times = []
        for level in levels:
            cell = [c for c in checks if c.level == level and c.alarm is not None]
            outcomes = [(c, verdict(c)) for c in cell]
            done = [(c, v) for c, v in outcomes if v is not None]
            alarms = sum(v[0] == "regression" for _, v in done)
            inconclusive = sum(v[0] == "inconclusive" for _, v in done)
            text = _rate(alarms, len(done))
            if mode == "relative" and level == 0.0:
                passed = sum(v[0] == "pass" for _, v in done)
                text = f"pass {passed}, inconclusive {inconclusive}, fail {alarms} of {len(done)}"
                if done:
                    met.append(_meets(mode, "pass", passed / len(done)))
            elif inconclusive:
                text += f" [{inconclusive} inconclusive]"
            if len(done) < len(cell):
                text += f" [{len(cell) - len(done)} incomplete]"
            row.append(text)
            times += [t for c, v in done if (t := check_seconds(c, v[1])) is not None]
            if done:
                met.append(_meets(mode, level, alarms / len(done)))
        median_time = statistics.median(times) if times else None
        row.append(f"{median_time:.2f}" if median_time is not None else "-")
        met.append(_meets(mode, "seconds", median_time))
        shown = [m for m in met if m]
        row.append("NO" if "NO" in shown else ("yes" if shown else ""))
        rows.append(row)
    errors = sum(c.alarm is None for c in checks)
    if errors:
        notes.append(f"{errors} checks errored (not counted)")
    return title, header, rows, notes


def _verdicts(checks: Sequence[Check], kernel: str | None, level: float) -> list[str]:
    return [
        c.state
        for c in checks
        if c.mode == "relative" and c.alarm is not None and c.level == level and kernel in (None, c.kernel)
    ]


def _per_kernel(checks: Sequence[Check], level: float, need: float) -> tuple[str, str]:
    """``"gemm 9/10, saxpy 10/10"`` (regressions of the checks at ``level``) and whether each kernel
    meets ``need``."""
    kernels = sorted({c.kernel for c in checks if c.mode == "relative"})
    parts, met = [], []
    for kernel in kernels:
        states = _verdicts(checks, kernel, level)
        if states:
            caught = states.count("regression")
            parts.append(f"{kernel} {caught}/{len(states)}")
            met.append(caught / len(states) >= need)
    return ", ".join(parts) or "not run", ("yes" if all(met) else "NO") if met else "-"


def targets_rows(checks: Sequence[Check]) -> list[list[object]]:
    """The compare gate against the targets of issue 43: (target, measured, met) rows.

    Detection is per kernel; false reds and the share judged pass are pooled over kernels (the
    false reds need :data:`FALSE_RED_CHECKS` unchanged checks to be met); the time is the median
    test time of every relative check; a 2x slowdown (level 1.0) must never be inconclusive.
    """
    rows: list[list[object]] = []
    for level, need, label in ((0.1, 0.9, "+10% caught >= 9/10"), (0.05, 0.8, "+5% caught >= 8/10")):
        measured, met = _per_kernel(checks, level, need)
        rows.append([f"{label} per kernel", measured, met])
    unchanged = _verdicts(checks, None, 0.0)
    reds = unchanged.count("regression")
    enough = len(unchanged) >= FALSE_RED_CHECKS
    rows.append(
        [
            f"0 false reds in {FALSE_RED_CHECKS} unchanged checks",
            f"{reds} of {len(unchanged)}",
            "-" if not unchanged else "NO" if reds else "yes" if enough else "so far (too few checks)",
        ]
    )
    passed = unchanged.count("pass")
    worst = [
        f"{kernel} {share:.0%}"
        for kernel in sorted({c.kernel for c in checks if c.mode == "relative"})
        if (states := _verdicts(checks, kernel, 0.0)) and (share := states.count("pass") / len(states)) < 0.9
    ]
    rows.append(
        [
            "unchanged judged pass >= 90%",
            f"{_rate(passed, len(unchanged))}" + (f"; below 90%: {', '.join(worst)}" if worst else ""),
            "-" if not unchanged else "yes" if passed / len(unchanged) >= 0.9 else "NO",
        ]
    )
    relative = [c for c in checks if c.mode == "relative" and c.alarm is not None]
    times = [c.seconds for c in relative if c.seconds is not None]
    median = statistics.median(times) if times else None
    rows.append(
        [
            "median <= 20 s per test",
            f"{median:.1f} s" if median is not None else "-",
            "-" if median is None else "yes" if median <= 20 else "NO",
        ]
    )
    doubled = _verdicts(checks, None, 1.0)
    undecided = len(doubled) - doubled.count("regression")
    rows.append(
        [
            "+100% (2x) a regression, never inconclusive",
            f"{doubled.count('regression')}/{len(doubled)} regression, "
            f"{doubled.count('inconclusive')} inconclusive",
            "-" if not doubled else "NO" if undecided else "yes",
        ]
    )
    return rows


def calibration_rows(
    checks: Iterable[Check], ks: Sequence[float], processes: Sequence[int], draws: int = 100, seed: int = 1
) -> list[list[object]]:
    """False alarms and detection of the noise rule per multiple ``k`` and number of baseline processes.

    Baselines are resampled from the unchanged absolute checks: ``P`` of them, each reduced to the
    least disturbed of its first :data:`PROCESS_RUNS` measurements (what a baseline process takes),
    give a baseline and its noise; the rule (tolerance max(10%, k x noise), ignoring tolerances set
    by the tests) then judges the other unchanged checks and every slowed one. Rates are pooled
    over kernels and draws; a check whose verdict needed more measurements than it took is left out
    (``--record-all`` runs take all six).
    """
    rng = random.Random(seed)
    by_kernel: dict[str, list[Check]] = {}
    for check in checks:
        if check.mode == "absolute" and check.alarm is not None and len(check.measurements) >= PROCESS_RUNS:
            by_kernel.setdefault(check.kernel, []).append(check)
    rows: list[list[object]] = []
    for k in ks:
        rule = rule_for(0.10, False, k)
        row: list[object] = [f"{k:g}"]
        for count in processes:
            hits = {level: [0, 0] for level in LEVELS}
            for kernel_checks in by_kernel.values():
                unchanged = [c for c in kernel_checks if c.level == 0.0]
                slowed = [c for c in kernel_checks if c.level != 0.0]
                if len(unchanged) <= count:
                    continue
                for _ in range(draws):
                    chosen = set(rng.sample(range(len(unchanged)), count))
                    values = [least_disturbed(unchanged[i].measurements[:PROCESS_RUNS]) for i in chosen]
                    baseline = baseline_of(values)  # type: ignore[arg-type]
                    rest = [c for i, c in enumerate(unchanged) if i not in chosen]
                    for other in rest + slowed:
                        verdict = judge_sequence(rule, baseline, other.measurements)
                        if verdict is not None:
                            hits[other.level][0] += verdict[0] == "regression"
                            hits[other.level][1] += 1
            for level in LEVELS:
                alarms, total = hits[level]
                row.append(f"{alarms / total:.1%}" if total else "-")
        rows.append(row)
    return rows
