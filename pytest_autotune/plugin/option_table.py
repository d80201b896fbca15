"""The plugin's options as a table: name, help text, kind and ini/env spelling, and their registration.

:mod:`pytest_autotune.plugin.options` resolves the values these options were given (command line
over environment over ini file) into :class:`~pytest_autotune.plugin.options.Settings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from pytest_autotune.policy import COMPARE_TOLERANCE, DEFAULT_POLICY
from pytest_autotune.timing.regression import NOISE_TOLERANCE_K, TIME_FLOOR, TOLERANCE
from pytest_autotune.values import format_seconds

if TYPE_CHECKING:
    import pytest

__all__ = [
    "DEFAULT_COMPARE_MAX_TIME",
    "MODES",
    "OPTIONS",
    "Mode",
    "Option",
    "add_options",
    "normalise_mode_argument",
]

Mode = Literal["check", "all", "missing"]
#: Default of ``--autotune-compare-max-time`` (seconds per test).
DEFAULT_COMPARE_MAX_TIME: Final = 20.0
#: Values of ``--autotune=MODE``.
MODES: Final = ("all", "missing")


@dataclass(frozen=True)
class Option:
    """One plugin option with its three spellings."""

    name: str
    help: str
    #: ``output``: the PATH of a file a report format writes, checked writable at start-up and kept in
    #: ``Settings.outputs`` by the option's name (a new format with a file needs no resolution code).
    kind: Literal["mode", "value", "flag", "append", "output"] = "value"
    metavar: str | None = None
    policy_key: str | None = None

    @property
    def _snake(self) -> str:
        return self.name.replace("-", "_")

    @property
    def flag(self) -> str:
        """Command-line spelling."""
        return f"--autotune-{self.name}" if self.name else "--autotune"

    @property
    def dest(self) -> str:
        """Attribute on ``config.option``."""
        return f"autotune_{self._snake}" if self.name else "autotune_mode"

    @property
    def ini(self) -> str:
        """Ini key."""
        return f"autotune_{self._snake}" if self.name else "autotune"

    @property
    def env(self) -> str:
        """Environment variable."""
        return f"PYTEST_AUTOTUNE_{self._snake.upper()}" if self.name else "PYTEST_AUTOTUNE"


OPTIONS: Final[tuple[Option, ...]] = (
    Option(
        "",
        "tune @tunable tests on this device and write autotune.json: MODE 'all' (default) tunes every "
        "selected test, 'missing' only tests without an up-to-date entry",
        kind="mode",
        metavar="MODE",
    ),
    Option(
        "budget",
        "tuning budget per test: a number of evaluations (e.g. 200), a duration (e.g. 90s, 10min) or "
        "both (e.g. 200|10min: whichever comes first); default 100 evaluations",
        metavar="BUDGET",
        policy_key="budget",
    ),
    Option(
        "strategy",
        "search strategy (bo, random, anneal, genetic, exhaustive, ...), optionally with options: "
        f"bo:initial=10; default {DEFAULT_POLICY.strategy}",
        metavar="NAME",
        policy_key="strategy",
    ),
    Option(
        "seed",
        "seed of the search (default: derived from each test's node id)",
        metavar="INT",
        policy_key="seed",
    ),
    Option("cache", "the results file (default: autotune.json in the rootdir)", metavar="PATH"),
    Option(
        "device",
        "the device a test's backend runs on (OpenCL, CUDA or torch/Triton; host tests ignore it): "
        "an index (OpenCL 'P' or 'P:D', CUDA and torch 'N'), a name substring or a device key; with "
        "xdist a comma list assigns worker gwK the K-th device",
        metavar="SPEC",
    ),
    Option(
        "tolerance",
        "regression tolerance in pytest-benchmark syntax: median:10%% (relative) and/or median:2us "
        f"(absolute floor); default median:{TOLERANCE:.0%}%,median:{format_seconds(TIME_FLOOR)}, the "
        f"relative one widened to {NOISE_TOLERANCE_K:g} x a baseline's noise (a relative one given "
        "here replaces that)",
        kind="append",
        metavar="EXPR",
        policy_key="tolerance",
    ),
    Option(
        "missing",
        "a test without an up-to-date entry for this device (none: its defaults run; or a stale one, "
        "whose declaration changed since tuning: its time is not judged): warn (default) or fail",
        metavar="warn|fail",
        policy_key="missing",
    ),
    Option(
        "check",
        "performance regressions: fail (default), warn or off",
        metavar="fail|warn|off",
        policy_key="check",
    ),
    Option(
        "clock",
        "the clock regression verdicts (stored baselines, --autotune-compare) judge: cpu (the CPU time "
        "the measuring process consumed, all threads: steady on a shared machine), wall (device or "
        "wall time) or auto (default: cpu on CPU devices such as PoCL, wall otherwise); both are "
        "measured and reported, tuning always ranks by device or wall time",
        metavar="auto|wall|cpu",
    ),
    Option(
        "isolate",
        "where tuning trials run: process (a worker subprocess per test; a crash or hang fails only "
        "that trial), none (in the pytest process) or auto (default: process on POSIX systems); "
        "normal runs always run in the pytest process",
        metavar="auto|process|none",
        policy_key="isolate",
    ),
    Option(
        "trial-timeout",
        "limit of one isolated tuning trial, in seconds or a duration (90s, 5min); a trial that runs "
        "longer is labelled timeout and its worker restarted; off disables (default 120s)",
        metavar="SECONDS",
        policy_key="trial_timeout",
    ),
    Option(
        "worker-memory",
        "restart an isolated trial worker once its memory grew by more than SIZE since it started "
        "(512MB, 2GB; off disables; default 1GiB), so a leak across trials cannot exhaust the machine",
        metavar="SIZE",
        policy_key="worker_memory",
    ),
    Option(
        "parallel",
        "run one test's tuning trials on N devices of its type at once, one isolated trial worker "
        "per device (the test's own device first; all or auto: every one on this host); finalists "
        "and the baseline stay on the test's own device; default 1",
        metavar="N|all",
    ),
    Option(
        "cluster",
        "run each tuned test's search on the devices of a Dask cluster, one trial worker per Dask "
        "worker (each advertises autotune-device=1): the scheduler's address, tcp://HOST:8786; needs "
        "pytest-autotune[dask]; finalists and the baseline stay on this host's device",
        metavar="ADDRESS",
    ),
    Option(
        "update-baseline", "re-measure the committed configurations and rewrite their baselines", kind="flag"
    ),
    Option(
        "prune",
        "remove entries of this device whose test no longer exists (only from files collected in "
        "full: refused after node ids, -k, -m, --deselect, --lf or a collection error)",
        kind="flag",
    ),
    Option(
        "json",
        "write this run's measurements in pytest-benchmark's JSON format",
        kind="output",
        metavar="PATH",
    ),
    Option(
        "allow-shared-device",
        "time tests even when several xdist workers share a device (timings then interfere)",
        kind="flag",
    ),
    Option(
        "report",
        "write a convergence plot (PNG, needs matplotlib) per tuned test and an index.html with the "
        "summary table into DIR",
        metavar="DIR",
    ),
    Option(
        "progress",
        "when output is not a terminal (CI logs), tuning writes a line when a test starts and ends, and "
        "a progress line after N trials and/or once a duration passed: 10, 30s or 10|30s; off for none "
        "(default 30s)",
        metavar="EVERY",
    ),
    Option(
        "transfer",
        "warm start: a test without an entry for this device starts from the histories of the same "
        "test on other devices and of its other parametrizations: auto (default) or off",
        metavar="auto|off",
    ),
    Option(
        "transfer-from",
        "more autotune.json files (comma-separated) whose histories warm-start tuning; read only",
        metavar="PATH",
    ),
    Option(
        "compare",
        "instead of checking against stored baselines, run each selected tunable test as it is at "
        "the git commit REF (origin/main, HEAD, a sha) and as it is in the working tree, side by side "
        "on this device, and fail when the working tree is confidently slower beyond "
        "--autotune-compare-tolerance",
        metavar="REF",
    ),
    Option(
        "compare-tolerance",
        f"slowdown of the working tree over REF that --autotune-compare accepts (default "
        f"{COMPARE_TOLERANCE:.0%}%)",
        metavar="PERCENT",
        policy_key="compare_tolerance",
    ),
    Option(
        "compare-max-time",
        f"longest a comparison of one test measures before it reports inconclusive, in seconds or a "
        f"duration (default {DEFAULT_COMPARE_MAX_TIME:g}s; a decided comparison stops earlier)",
        metavar="SECONDS",
    ),
    Option(
        "compare-strict",
        "an inconclusive comparison fails the test (default: a warning)",
        kind="flag",
    ),
    Option(
        "report-md",
        "write a Markdown summary of this run (checks, comparisons, tuning) to PATH, e.g. "
        "$GITHUB_STEP_SUMMARY (appended to when the file exists)",
        kind="output",
        metavar="PATH",
    ),
)


def _defaults_help() -> str:
    """What the ``--help`` text of ``--autotune`` says about the defaults that have no option."""
    from pytest_autotune.timing.measure import MEASURE_REPEAT, TRIAL_REPEAT

    policy = DEFAULT_POLICY
    return (
        f". Defaults: autotune.measure makes {policy.warmup} untimed and {TRIAL_REPEAT} timed calls per "
        f"trial, {MEASURE_REPEAT} in checks, baselines and finalists (@tunable(repeat=, warmup=) "
        f"change it); the best {policy.finalists} trials, the declared default and the committed "
        "configuration are re-measured as finalists; 'x vs default' compares with the declared "
        "defaults, where a parameter without default= takes its first valid value (smallest number, "
        "first Categorical value)"
    )


def add_options(parser: pytest.Parser) -> None:
    """Register every option in the ``autotune`` group and its ini key."""
    group = parser.getgroup("autotune", "auto-tuning of @tunable kernel tests (pytest-autotune)")
    for option in OPTIONS:
        extra = _defaults_help() if option.kind == "mode" else ""
        help_text = f"{option.help}{extra} [ini: {option.ini}, env: {option.env}]"
        if option.kind == "mode":
            group.addoption(
                option.flag,
                action="store",
                nargs="?",
                const="all",
                default=None,
                dest=option.dest,
                metavar=option.metavar,
                help=help_text,
            )
        elif option.kind == "flag":
            group.addoption(option.flag, action="store_true", default=None, dest=option.dest, help=help_text)
        elif option.kind == "append":
            group.addoption(
                option.flag,
                action="append",
                default=None,
                dest=option.dest,
                metavar=option.metavar,
                help=help_text,
            )
        else:
            group.addoption(
                option.flag,
                action="store",
                default=None,
                dest=option.dest,
                metavar=option.metavar,
                help=help_text,
            )
        parser.addini(option.ini, option.help.replace("%%", "%"), type="string", default="")


def normalise_mode_argument(args: list[str]) -> None:
    """Make ``pytest --autotune some/path`` mean ``--autotune=all some/path`` (in place).

    ``--autotune`` takes an optional value, and argparse would otherwise read the next path as
    the mode. A following word that is a mode (``all``/``missing``) is kept as the value.
    """
    for index, arg in enumerate(args[:-1]):
        following = args[index + 1]
        if arg == "--autotune" and not following.startswith("-") and following not in MODES:
            args[index] = "--autotune=all"
