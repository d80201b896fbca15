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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_autotune.input_file import not_regular_reason
from pytest_autotune.plugin.option_table import (
    DEFAULT_COMPARE_MAX_TIME,
    MODES,
    OPTIONS,
    Mode,
    Option,
    add_options,
    normalise_mode_argument,
)
from pytest_autotune.plugin.report.progress import DEFAULT_PROGRESS_EVERY, ProgressEvery
from pytest_autotune.plugin.report.target import foreign_index
from pytest_autotune.policy import PolicyError, parse_tolerance_spec
from pytest_autotune.timing.clock import ClockChoice, check_choice
from pytest_autotune.values import is_number_text, parse_bool, parse_duration

if TYPE_CHECKING:
    import pytest

__all__ = [
    "MODES",
    "OPTIONS",
    "Option",
    "PolicyValidator",
    "Settings",
    "add_options",
    "normalise_mode_argument",
    "parse_parallel",
    "resolve",
]


@dataclass(frozen=True)
class Settings:
    """Session-wide settings resolved from the command line, environment and ini file."""

    mode: Mode = "check"
    update_baseline: bool = False
    prune: bool = False
    cache_path: Path = Path("autotune.json")
    device_spec: str | None = None
    #: The files the report formats write (options of kind ``output``), by option name.
    outputs: Mapping[str, Path] = field(default_factory=dict)
    allow_shared_device: bool = False
    policy_layer: dict[str, Any] = field(default_factory=dict)
    report_dir: Path | None = None
    progress_every: ProgressEvery = DEFAULT_PROGRESS_EVERY
    transfer: bool = True
    transfer_from: tuple[Path, ...] = ()
    compare_ref: str | None = None
    compare_max_time: float = DEFAULT_COMPARE_MAX_TIME
    compare_strict: bool = False
    #: Devices one test's trials run on at once: a number, or ``"all"`` of the test's type.
    parallel: int | str = 1
    #: The Dask scheduler whose devices run the searches (``--autotune-cluster``), None: this host.
    cluster: str | None = None
    #: The clock regression verdicts judge (``--autotune-clock``; :mod:`pytest_autotune.timing.clock`).
    clock: ClockChoice = "auto"

    @property
    def json_path(self) -> Path | None:
        """``--autotune-json``: where the pytest-benchmark JSON goes."""
        return self.outputs.get("json")

    @property
    def report_md(self) -> Path | None:
        """``--autotune-report-md``: where the Markdown summary goes."""
        return self.outputs.get("report-md")

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


class PolicyValidator(Protocol):
    """Parses policy values, errors naming ``source``
    (:func:`pytest_autotune.tuning.validation.validate_policy`; the session passes it in, so that the
    options every plugin module reads do not sit on the strategies and their option checks)."""

    def __call__(self, values: Mapping[str, Any], *, source: str) -> dict[str, Any]: ...


def _policy_values(
    option: Option, value: Any, source: str, validate_policy: PolicyValidator
) -> dict[str, Any]:
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
    so an unwritable ``--autotune-json`` fails before any tuning rather than after it. An existing
    path must be a regular file: a FIFO would block the write after the tests passed (forever, if
    nothing reads it), and a device or ``/proc`` file is no place for a report.
    """
    if path.is_dir():
        raise PolicyError(f"{source}: {path} is a directory, expected a file path")
    try:
        reason = not_regular_reason(path)
    except FileNotFoundError:
        reason = None
    except OSError as exc:
        raise PolicyError(f"{source}: {path} cannot be examined ({exc.strerror or exc})") from exc
    if reason is not None:  # a FIFO would block the write at the end of the run; a device swallows it
        raise PolicyError(f"{source}: {path} {reason}; expected a regular file or a path to create one at")
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


def _readable_file(path: Path, source: str, expected: str) -> Path:
    """``path`` when it is a regular file or does not exist; else a usage error naming ``source``.

    A directory, ``/dev/null``, ``/dev/zero``, a FIFO or a ``/proc`` file is refused here, before
    anything reads it (:mod:`pytest_autotune.input_file`): reading some of them never ends.
    """
    try:
        reason = not_regular_reason(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise PolicyError(f"{source}: {path} cannot be read ({exc.strerror or exc})") from exc
    if reason is not None:
        raise PolicyError(f"{source}: {path} {reason}; expected {expected}")
    return path


def _path_value(value: Any, source: str, base: Path) -> Path:
    """The path an option names, resolved against ``base``; an empty value is a usage error (it
    would name ``base`` itself: the rootdir or the current folder)."""
    text = str(value).strip()
    if not text:
        raise PolicyError(f"{source}: an empty value names no file or folder; give a path")
    return (base / Path(text).expanduser()).resolve()


def _report_dir(path: Path, source: str) -> Path:
    """A folder the report can be written to, with matplotlib importable (checked before tuning);
    an ``index.html`` there that the report did not write is a usage error
    (:mod:`pytest_autotune.plugin.report.target`)."""
    from importlib.util import find_spec

    if path.exists() and not path.is_dir():
        raise PolicyError(f"{source}: {path} is not a directory")
    refusal = foreign_index(path)
    if refusal is not None:
        raise PolicyError(f"{source}: {refusal}")
    _writable_file(path / "index.html", source)
    if find_spec("matplotlib") is None:
        raise PolicyError(
            f"{source}: the report's plots need matplotlib: pip install 'pytest-autotune[report]'"
        )
    return path


def resolve(config: pytest.Config, validate_policy: PolicyValidator) -> Settings:
    """Read and validate every option; raises :class:`PolicyError` naming the faulty source.

    ``validate_policy`` parses the options that set policy keys.
    """
    values: dict[str, Any] = {}
    policy_layer: dict[str, Any] = {}
    outputs: dict[str, Path] = {}
    for option in OPTIONS:
        found = _raw(config, option)
        if found is None:
            continue
        value, source, base = found
        if option.policy_key is not None:
            policy_layer.update(_policy_values(option, value, source, validate_policy))
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
        elif option.name == "clock":
            try:
                values["clock"] = check_choice(str(value).strip())
            except ValueError as exc:
                raise PolicyError(f"{source}: invalid value {value!r}: {exc}") from exc
        elif option.name == "transfer-from":
            parts = [part.strip() for part in str(value).split(",") if part.strip()]
            values["transfer-from"] = tuple(
                _readable_file((base / Path(part).expanduser()).resolve(), source, "an autotune.json file")
                for part in parts
            )
        elif option.kind == "output":
            outputs[option.name] = _writable_file(_path_value(value, source, base), source)
        elif option.name == "cache":
            values["cache"] = _path_value(value, source, base)
            _readable_file(values["cache"], source, "an autotune.json file (or where to create one)")
        elif option.name == "compare-max-time":
            values[option.name] = _positive_seconds(value, source)
        elif option.name == "report":
            values["report"] = _report_dir(_path_value(value, source, base), source)
        elif option.name == "parallel":
            try:
                values["parallel"] = parse_parallel(str(value))
            except ValueError as exc:
                raise PolicyError(f"{source}: invalid value {value!r}: {exc}") from exc
        elif option.name == "cluster":
            from pytest_autotune.tuning.parallel.dask import check_address

            try:
                values["cluster"] = check_address(str(value))
            except ValueError as exc:
                raise PolicyError(f"{source}: {exc}") from exc
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
        outputs=outputs,
        allow_shared_device=values.get("allow-shared-device", False),
        policy_layer=policy_layer,
        report_dir=values.get("report"),
        progress_every=values.get("progress", DEFAULT_PROGRESS_EVERY),
        transfer=values.get("transfer", True),
        transfer_from=values.get("transfer-from", ()),
        compare_ref=values.get("compare"),
        compare_max_time=values.get("compare-max-time", DEFAULT_COMPARE_MAX_TIME),
        compare_strict=values.get("compare-strict", False),
        parallel=values.get("parallel", 1),
        cluster=values.get("cluster"),
        clock=values.get("clock", "auto"),
    )
    if settings.cluster is not None and settings.parallel != 1:
        raise PolicyError(
            "--autotune-cluster and --autotune-parallel cannot be combined: the cluster's workers are "
            "the devices the trials run on"
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


def parse_parallel(text: str) -> int | str:
    """``--autotune-parallel``: ``N`` (a positive integer) or ``"all"`` (also spelled ``auto``)."""
    word = text.strip().lower()
    if word in ("all", "auto"):
        return "all"
    try:
        count = int(word)
    except ValueError:
        raise ValueError(f"expected a number of devices or 'all', got {text!r}") from None
    if count < 1:
        raise ValueError(f"expected at least 1 device, got {count}")
    return count


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
