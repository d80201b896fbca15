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

from pytest_autotune.policy import PolicyError, parse_tolerance_spec
from pytest_autotune.timing.regression import NOISE_TOLERANCE_K, TIME_FLOOR, TOLERANCE
from pytest_autotune.tuning.validation import validate_policy
from pytest_autotune.values import format_seconds, parse_bool

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
        "whichever comes first)",
        metavar="BUDGET",
        policy_key="budget",
    ),
    Option(
        "strategy",
        "search strategy (bo, random, anneal, genetic, exhaustive, ...), optionally with options: "
        "bo:initial=10",
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
        f"(absolute floor); default median:{TOLERANCE:.0%}%,median:{format_seconds(TIME_FLOOR)}, the "
        f"relative one widened to {NOISE_TOLERANCE_K:g} x a baseline's noise (a relative one given "
        "here replaces that)",
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
)


def add_options(parser: pytest.Parser) -> None:
    """Register every option in the ``autotune`` group and its ini key."""
    group = parser.getgroup("autotune", "auto-tuning of @tunable kernel tests (pytest-autotune)")
    for option in OPTIONS:
        help_text = f"{option.help} [ini: {option.ini}, env: {option.env}]"
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
        elif option.name in ("cache", "json"):
            values[option.name] = (base / Path(str(value)).expanduser()).resolve()
            if option.name == "json":
                _writable_file(values["json"], source)
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
    )
    if settings.tuning and settings.update_baseline:
        raise PolicyError(
            "--autotune and --autotune-update-baseline cannot be combined: tuning measures baselines"
        )
    return settings
