"""The fourth round of hostile inputs (issue 44): output paths, cluster addresses, warnings as
errors, a large store, and the plugin's messages about them.

Each input here once hung the run, crashed it with a traceback through the plugin, or passed in
silence; each must now be one clear message naming the option, file or entry at fault.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from tests.commands.test_hostile_commands import _huge_store
from tests.plugin.compare import test_compare as compare_tests
from tests.plugin.compare.git_commands import git
from tests.plugin.conftest import TWO_TESTS
from tests.test_input_file import fifo, returns_quickly


# -- 1: an output path that is a FIFO or a device ---------------------------------------------------
@pytest.mark.parametrize("option", ["--autotune-json", "--autotune-report-md"])
@pytest.mark.parametrize("target", ["fifo", "/dev/null"])
def test_an_output_path_that_is_no_regular_file_is_a_usage_error_at_start(
    project: pytest.Pytester, option: str, target: str
) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    fifo(project.path / "fifo")
    result = project.runpytest_subprocess(f"{option}={target}", timeout=60)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    shown = project.path / "fifo" if target == "fifo" else target
    kind = "a FIFO (named pipe)" if target == "fifo" else "a character device"
    assert f"{option}: {shown} is {kind}, not a regular file" in text
    assert "INTERNALERROR" not in text


def test_writing_an_output_never_blocks_on_a_fifo_swapped_in_after_the_check(tmp_path: Path) -> None:
    from pytest_autotune.input_file import open_output

    def write() -> None:
        with open_output(fifo(tmp_path / "out.md"), append=True) as handle:
            handle.write("x")

    error = returns_quickly(write)
    assert isinstance(error, OSError)


# -- 2, 9: --autotune-cluster ------------------------------------------------------------------------
class _NotDask:
    """A TCP service on 127.0.0.1 that is not Dask: it greets each client with ``greeting`` (or says
    nothing) and counts its connections; it serves at most ``limit`` of them, then stops."""

    def __init__(self, greeting: bytes, limit: int = 8) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(limit)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(greeting, limit), daemon=True)
        self._thread.start()

    def _serve(self, greeting: bytes, limit: int) -> None:
        held = []
        while self.connections < limit and not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            if greeting:
                conn.sendall(greeting)
            held.append(conn)
        for conn in held:
            conn.close()

    def __enter__(self) -> _NotDask:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("address", ["not an address", "", "tcp://[::1", "tcp://host:99999", "http://h:1"])
def test_a_malformed_cluster_address_is_one_usage_error(project: pytest.Pytester, address: str) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    result = project.runpytest_subprocess("--autotune", f"--autotune-cluster={address}", timeout=60)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "--autotune-cluster:" in result.stderr.str()
    assert "Traceback" not in text


def test_a_service_that_is_not_dask_is_refused_once_per_run_by_name(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "process")
    with _NotDask(b"SSH-2.0-OpenSSH_9.6\r\n") as service:
        address = f"tcp://127.0.0.1:{service.port}"
        result = project.runpytest_subprocess("--autotune", f"--autotune-cluster={address}", timeout=120)
    text = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=2)
    assert f"--autotune-cluster: {address}: the service there is not a Dask scheduler" in text
    assert "not tried again in this run" in text
    assert "EiB" not in text
    assert service.connections == 1


def test_an_unreachable_scheduler_fails_each_test_at_once_with_one_message(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "process")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = project.runpytest_subprocess(
        "--autotune", f"--autotune-cluster=tcp://127.0.0.1:{port}", timeout=120
    )
    text = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=2)
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: Connection refused" in text
    assert "not tried again in this run" in text


def test_a_silent_service_is_refused_after_a_bounded_wait() -> None:
    from pytest_autotune.tuning.parallel.dask import ClusterUnreachable, connect

    with _NotDask(b"") as service, pytest.raises(ClusterUnreachable, match=r"sent no greeting in 0\.5 s"):
        connect(f"tcp://127.0.0.1:{service.port}", timeout=0.5)


def test_the_cluster_without_isolation_warns_that_trials_run_here(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=TWO_TESTS)  # the project's trials run in-process (isolate=none)
    result = project.runpytest_subprocess("--autotune", "--autotune-cluster=tcp://127.0.0.1:9", timeout=120)
    result.assert_outcomes(passed=2)
    assert "--autotune-cluster=tcp://127.0.0.1:9 needs isolated trials" in result.stdout.str()


# -- 5: an integer of 5000 digits in the store -------------------------------------------------------
def test_a_plain_run_names_the_store_holding_an_integer_of_5000_digits(project: pytest.Pytester) -> None:
    project.makepyfile(test_k="def test_k():\n    pass\n")
    store = project.path / "autotune.json"
    _huge_store(store)
    result = project.runpytest_subprocess(timeout=60)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{store}: holds an integer of 5000 digits at" in text
    assert '"t.py::k" -> "baseline" -> "median" (a damaged value)' in text  # the entry and field
    assert "set_int_max_str_digits" not in text
    assert "Traceback" not in text


# -- 8, 11: a store of many unused entries, ids holding escape codes ---------------------------------
def _with_gone_entries(project: pytest.Pytester, count: int, extra: str) -> None:
    """Tune ``test_k.py``, then copy its entry to ``count`` tests of a file that is gone, and ``extra``."""
    project.makepyfile(test_k=TWO_TESTS)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    store = project.path / "autotune.json"
    data = json.loads(store.read_text())
    (slot,) = data["devices"].values()
    entry = slot["tests"]["test_k.py::test_a"]
    for nodeid in [*(f"test_gone.py::test_{i:05d}" for i in range(count)), extra]:
        slot["tests"][nodeid] = entry
    store.write_text(json.dumps(data))


def test_unused_entries_are_summarised_and_their_ids_escaped(project: pytest.Pytester) -> None:
    _with_gone_entries(project, 30, "test_gone.py::test_x[\x1b[2J\u202eevil]")
    result = project.runpytest("-q")
    out = result.stdout.str()
    assert "unused entries (remove: pytest --autotune-prune): 31" in out
    assert "  ... and 21 more (pytest -v lists them all" in out
    assert "test_gone.py::test_00009" in out
    assert "test_gone.py::test_00010" not in out
    verbose = project.runpytest("-v").stdout.str()
    assert "test_gone.py::test_00029" in verbose
    assert "\x1b[2J" not in verbose
    assert "\u202e" not in verbose
    assert "test_gone.py::test_x[\\x1b[2J\\u202eevil]" in verbose


# -- 7: the plugin's warnings under -W error / PYTHONWARNINGS=error ----------------------------------
@pytest.mark.parametrize("how", ["-W", "PYTHONWARNINGS"])
def test_a_warning_made_an_error_fails_the_test_cleanly_and_the_summary_counts_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=2")
    args = ["--autotune-check=warn", "--autotune-report-md=summary.md"]
    if how == "-W":
        args += ["-W", "error::pytest_autotune.warning_types.AutotuneWarning"]
    else:
        monkeypatch.setenv("PYTHONWARNINGS", "error")
    result = project.runpytest_subprocess(*args, timeout=120)
    text = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, failed=1)
    assert (
        "AutotuneRegressionWarning (an error under the warning filters, e.g. -W error): test_k.py::test_a"
        in text
    )
    assert "pytest_autotune/plugin" not in text  # no traceback through the plugin's internals
    summary = (project.path / "summary.md").read_text()
    assert "0 tunable tests" not in summary
    assert "2 tunable tests" in summary


repo = compare_tests.repo  # the git project of the compare tests (a fixture)


def test_an_inconclusive_comparison_under_w_error_is_a_clean_failure_counted_in_the_summary(
    repo: pytest.Pytester,
) -> None:
    repo.makepyfile(test_noisy=compare_tests.NOISY)
    git(repo.path, "add", "test_noisy.py")
    git(repo.path, "commit", "-q", "-m", "noisy")
    args = ["--autotune-compare=HEAD", "--autotune-compare-max-time=3", "--autotune-report-md=summary.md"]
    result = repo.runpytest(*args, "-W", "error", "test_noisy.py")
    text = result.stdout.str()
    if "AutotuneInconclusiveWarning" not in text:  # the pairs decided after all: nothing to see here
        pytest.skip("the comparison was decided within its 3 s")
    result.assert_outcomes(failed=1)
    assert "AutotuneInconclusiveWarning (an error under the warning filters, e.g. -W error)" in text
    assert "pytest_autotune/plugin" not in text
    summary = (repo.path / "summary.md").read_text()
    assert "0 tunable tests" not in summary


def test_the_fast_canonical_text_is_the_layout_entry_by_entry() -> None:
    """The store's text keeps its layout (one value per line, a history's rows one per line) when
    json's encoder writes the parts outside histories and entries' texts are reused."""
    from pytest_autotune.store import document

    history = {"version": 1, "params": ["A", "P"], "best": 1e-4, "trials": [[1.0, 3, [2, 1]]], "failures": []}
    entry = {
        "config": {"A": 3, "P": [2, 1]},
        "space_hash": "h",
        "baseline": {"median": 1e-4},
        "history": history,
    }
    data = {
        "schema_version": 1,
        "devices": {"k": {"info": {"name": "é\n", "x": [1, {"b": [], "a": {}}]}, "tests": {"t::a": entry}}},
    }
    text = document.dumps(data)
    assert text == document.dumps(data)  # the second time from the reused entry text
    assert '          "history": {\n            "best": 0.0001,\n            "failures": [],\n' in text
    rows = '            "params": ["A", "P"],\n            "trials": [\n              [1.0, 3, [2, 1]]\n'
    assert rows in text
    assert '"x": [\n          1,\n          {\n            "a": {},\n            "b": []\n' in text
    assert json.loads(text) == data


@pytest.mark.parametrize(("text", "depth"), [("[]", 1), ('{"a": "[[{"}', 1), ('[[["\\"]["]]]', 3), ("5", 0)])
def test_the_nesting_is_read_from_brackets_outside_strings(text: str, depth: int) -> None:
    from pytest_autotune.input_file import _text_depth

    assert _text_depth(text) == depth


@pytest.mark.parametrize(
    "moment",
    [
        "2026-02-30T12:00:00Z",
        "2026-01-31T12:00:00",
        "2026-01-31T12:00:00.5Z",
        "2026-01-31T12:00:00+00:00Z",
        "20260131T120000Z",
        "2026-01-31 12:00:00Z",
        "2026-01-31T24:00:00Z",
        10**40,
    ],
)
def test_measured_at_read_on_the_fast_path_is_as_strict_as_its_format(moment: object) -> None:
    from pytest_autotune.entry import DamagedEntryError, _Reader

    assert _Reader({"m": "2026-01-31T12:00:00Z"}, "W", "").moment("m") == "2026-01-31T12:00:00Z"
    with pytest.raises(DamagedEntryError, match="must be a UTC time like"):
        _Reader({"m": moment}, "W", "").moment("m")
