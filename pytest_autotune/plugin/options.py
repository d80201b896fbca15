"""Command-line options, ini keys and environment variables of the plugin, and their resolution.

Every option ``--autotune-NAME`` has an ini key ``autotune_NAME`` and an environment variable
``PYTEST_AUTOTUNE_NAME`` (``--autotune`` itself: ``autotune`` and ``PYTEST_AUTOTUNE``). For each
option the command line wins over the environment, which wins over the ini file; per-test
``@tunable`` keywords and ``@pytest.mark.autotune`` win over all three (see
:mod:`pytest_autotune.policy`). Values are validated once, at configure time, and a bad one is a
usage error naming the option, variable or key it came from.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_autotune.plugin.progress import DEFAULT_PROGRESS_EVERY, ProgressEvery
from pytest_autotune.policy import COMPARE_TOLERANCE, DEFAULT_POLICY, PolicyError, parse_tolerance_spec
from pytest_autotune.timing.regression import TIME_FLOOR, TOLERANCE
from pytest_autotune.tuning.validation import validate_policy
from pytest_autotune.values import format_seconds, is_number_text, parse_bool, parse_duration

if TYPE_CHECKING:
    import pytest

__all__ = [
    "MODES",
    "OPTIONS",
    "Option",
    "Settings",
    "add_options",
    "normalise_mode_argument",
    "resolve",
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
    kind: Literal["mode", "value", "flag", "append"] = "value"
    metavar: str | None = None
    policy_key: str | None = None

    @property
    def flag(self) -> str:
        """Command-line spelling."""
        return f"--autotune-{self.name}" if self.name else "--autotune"

    @property
    def dest(self) -> str:
        """Attribute on ``config.option``."""
        return f"autotune_{self.name.replace('-', '_')}" if self.name else "autotune_mode"

    @property
    def ini(self) -> str:
        """Ini key."""
        return f"autotune_{self.name.replace('-', '_')}" if self.name else "autotune"

    @property
    def env(self) -> str:
        """Environment variable."""
        return f"PYTEST_AUTOTUNE_{self.name.replace('-', '_').upper()}" if self.name else "PYTEST_AUTOTUNE"


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
        "tuning budget per test: evaluations (60), a duration (90s, 10min) or both (60|10min: "
        "whichever comes first); default 100 evaluations",
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
        "OpenCL device: index 'P' or 'P:D', a name substring or a device key; with xdist a comma "
        "list assigns worker gwK the K-th device",
        metavar="SPEC",
    ),
    Option(
        "tolerance",
        "regression tolerance in pytest-benchmark syntax: median:10%% (relative) and/or median:2us "
        f"(absolute floor); default median:{TOLERANCE:.0%}%,median:{format_seconds(TIME_FLOOR)}",
        kind="append",
        metavar="EXPR",
        policy_key="tolerance",
    ),
    Option(
        "missing",
        "a test without a tuned entry for this device: warn (default) or fail",
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
        "update-baseline", "re-measure the committed configurations and rewrite their baselines", kind="flag"
    ),
    Option(
        "prune",
        "remove entries of this device whose test no longer exists (only from files collected in "
        "full: refused after node ids, -k, -m, --deselect, --lf or a collection error)",
        kind="flag",
    ),
    Option("json", "write this run's measurements in pytest-benchmark's JSON format", metavar="PATH"),
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
        metavar="PATH",
    ),
)


def _defaults_help() -> str:
    """What the ``--help`` text of ``--autotune`` says about the defaults that have no option."""
    from pytest_autotune.fixture import MEASURE_REPEAT, TRIAL_REPEAT

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


@dataclass(frozen=True)
class Settings:
    """Session-wide settings resolved from the command line, environment and ini file."""

    mode: Mode = "check"
    update_baseline: bool = False
    prune: bool = False
    cache_path: Path = Path("autotune.json")
    device_spec: str | None = None
    json_path: Path | None = None
    allow_shared_device: bool = False
    policy_layer: dict[str, Any] = field(default_factory=dict)
    report_dir: Path | None = None
    progress_every: ProgressEvery = DEFAULT_PROGRESS_EVERY
    transfer: bool = True
    transfer_from: tuple[Path, ...] = ()
    compare_ref: str | None = None
    compare_max_time: float = DEFAULT_COMPARE_MAX_TIME
    compare_strict: bool = False
    report_md: Path | None = None

    @property
    def tuning(self) -> bool:
        """True in ``--autotune`` / ``--autotune=missing`` runs."""
        return self.mode != "check"

    def describe_mode(self) -> str:
        """Short text of the mode for the header line."""
        if self.mode == "all":
            return "tune"
        if self.mode == "missing":
            return "tune missing"
        if self.update_baseline:
            return "update baselines"
        if self.compare_ref is not None:
            return f"compare with {self.compare_ref}"
        return f"check ({self.policy_layer.get('check', 'fail')})"


def _raw(config: pytest.Config, option: Option) -> tuple[Any, str, Path] | None:
    """(value, where it came from, base directory for relative paths) of the winning source."""
    value = config.getoption(option.dest)
    if value not in (None, []):
        return value, f"command line {option.flag}", config.invocation_params.dir
    env = os.environ.get(option.env)
    if env is not None and env.strip():
        return env.strip(), f"environment variable {option.env}", Path.cwd()
    ini = config.getini(option.ini)
    if isinstance(ini, str) and ini.strip():
        return ini.strip(), f"ini key {option.ini}", config.rootpath
    return None


def _flag(value: Any, source: str) -> bool:
    try:
        return parse_bool(value)
    except ValueError as exc:
        raise PolicyError(f"{source}: {exc}") from exc


def _policy_values(option: Option, value: Any, source: str) -> dict[str, Any]:
    if option.name == "tolerance":
        texts = value if isinstance(value, list) else [value]
        raw: dict[str, Any] = {}
        for text in texts:
            try:
                raw.update(parse_tolerance_spec(text))
            except ValueError as exc:
                raise PolicyError(f"{source}: {exc}") from exc
        return validate_policy(raw, source=source)
    assert option.policy_key is not None
    return validate_policy({option.policy_key: value}, source=source)


def _writable_file(path: Path, source: str) -> Path:
    """``path`` when a file can be written there (its folders may be missing); else a usage error.

    Checked at start-up by making (and removing) a probe directory in the nearest existing folder,
    so an unwritable ``--autotune-json`` fails before any tuning rather than after it.
    """
    if path.is_dir():
        raise PolicyError(f"{source}: {path} is a directory, expected a file path")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if not folder.is_dir():
            raise NotADirectoryError(f"{folder} is not a directory")
        os.rmdir(tempfile.mkdtemp(prefix=".autotune-probe-", dir=folder))
    except OSError as exc:
        raise PolicyError(f"{source}: cannot write {path} ({exc.strerror or exc})") from exc
    return path


def _report_dir(path: Path, source: str) -> Path:
    """A folder the report can be written to, with matplotlib importable (checked before tuning)."""
    from importlib.util import find_spec

    if path.exists() and not path.is_dir():
        raise PolicyError(f"{source}: {path} is not a directory")
    _writable_file(path / "index.html", source)
    if find_spec("matplotlib") is None:
        raise PolicyError(
            f"{source}: the report's plots need matplotlib: pip install 'pytest-autotune[report]'"
        )
    return path


def resolve(config: pytest.Config) -> Settings:
    """Read and validate every option; raises :class:`PolicyError` naming the faulty source."""
    values: dict[str, Any] = {}
    policy_layer: dict[str, Any] = {}
    for option in OPTIONS:
        found = _raw(config, option)
        if found is None:
            continue
        value, source, base = found
        if option.policy_key is not None:
            policy_layer.update(_policy_values(option, value, source))
        elif option.kind == "flag":
            values[option.name] = _flag(value, source)
        elif option.kind == "mode":
            text = str(value).strip()
            if text not in (*MODES, "off", "check"):
                raise PolicyError(f"{source}: invalid mode {text!r}; expected {' or '.join(MODES)}")
            values["mode"] = "check" if text in ("off", "check") else text
        elif option.name == "transfer":
            if str(value).strip() not in ("auto", "off"):
                raise PolicyError(f"{source}: invalid value {value!r}; expected auto or off")
            values["transfer"] = str(value).strip() == "auto"
        elif option.name == "transfer-from":
            parts = [part.strip() for part in str(value).split(",") if part.strip()]
            values["transfer-from"] = tuple((base / Path(part).expanduser()).resolve() for part in parts)
        elif option.name in ("cache", "json", "report-md"):
            values[option.name] = (base / Path(str(value)).expanduser()).resolve()
            if option.name != "cache":
                _writable_file(values[option.name], source)
        elif option.name == "compare-max-time":
            values[option.name] = _positive_seconds(value, source)
        elif option.name == "report":
            values["report"] = _report_dir((base / Path(str(value)).expanduser()).resolve(), source)
        elif option.name == "progress":
            try:
                values["progress"] = ProgressEvery.parse(str(value))
            except ValueError as exc:
                raise PolicyError(f"{source}: invalid value {value!r}: {exc}") from exc
        else:
            values[option.name] = str(value)
    settings = Settings(
        mode=values.get("mode", "check"),
        update_baseline=values.get("update-baseline", False),
        prune=values.get("prune", False),
        cache_path=values.get("cache", config.rootpath / "autotune.json"),
        device_spec=values.get("device"),
        json_path=values.get("json"),
        allow_shared_device=values.get("allow-shared-device", False),
        policy_layer=policy_layer,
        report_dir=values.get("report"),
        progress_every=values.get("progress", DEFAULT_PROGRESS_EVERY),
        transfer=values.get("transfer", True),
        transfer_from=values.get("transfer-from", ()),
        compare_ref=values.get("compare"),
        compare_max_time=values.get("compare-max-time", DEFAULT_COMPARE_MAX_TIME),
        compare_strict=values.get("compare-strict", False),
        report_md=values.get("report-md"),
    )
    if settings.tuning and settings.update_baseline:
        raise PolicyError(
            "--autotune and --autotune-update-baseline cannot be combined: tuning measures baselines"
        )
    if settings.compare_ref is not None and (settings.tuning or settings.update_baseline):
        other = "--autotune" if settings.tuning else "--autotune-update-baseline"
        raise PolicyError(
            f"--autotune-compare and {other} cannot be combined: a comparison measures the committed "
            "configurations of two trees and writes nothing; tune or refresh baselines in a separate run"
        )
    return settings


def _positive_seconds(value: Any, source: str) -> float:
    """Seconds from ``20``, ``"20"``, ``"90s"`` or ``"2min"``; a usage error naming ``source`` else."""
    text = str(value).strip()
    try:
        seconds = float(text) if is_number_text(text) else parse_duration(text)
    except ValueError as exc:
        raise PolicyError(f"{source}: {exc}") from exc
    if not seconds > 0:
        raise PolicyError(f"{source}: {text!r} is not a positive duration")
    return seconds
