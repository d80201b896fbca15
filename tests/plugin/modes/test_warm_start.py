"""Warm start in ``pytest --autotune``: histories of other devices and parametrizations as sources.

The fake timer's optimum sets every integer parameter to 3 (see ``conftest.py``); each test body
writes the configuration it ran with to ``calls.jsonl``, so the order of the trials can be read.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.backends.host import host_key

Entries = Callable[[], dict[str, dict[str, Any]]]

WIDE = """
import json
import pytest
from pytest_autotune import Interval, Set, tunable

@pytest.mark.parametrize("n", [1, 2])
@tunable(A=Interval(1, 40, default=1), B=Set(1, 2, 3, default=1), strategy="random", budget=60)
def test_w(autotune, n):
    with open("calls.jsonl", "a") as f:
        f.write(json.dumps(autotune.config) + "\\n")
    autotune.measure(lambda: None)
"""
NODE = "test_k.py::test_w[1]"
#: The source's best configurations, best first: the first trials of a warm-started run.
SOURCE_BEST = [{"A": 3, "B": 3}, {"A": 4, "B": 3}, {"A": 2, "B": 2}]


def _history(rows: list[list[Any]], params: tuple[str, ...] = ("A", "B"), **extra: Any) -> dict[str, Any]:
    return {"version": 1, "params": list(params), "best": 1e-4, "trials": rows, "failures": [], **extra}


def _entry(history: Any = None, config: dict[str, Any] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"config": config or {"A": 3, "B": 3}, "space_hash": "elsewhere"}
    entry["baseline"] = {"median": 1e-4, "unit": "s"}
    if history is not None:
        entry["history"] = history
    return entry


SOURCE = _history(
    [[1.0, 3, 3], [1.2, 4, 3], [1.5, 2, 2], [2.0, 5, 1], [3.0, 9, 1]], failures=[["runtime", 40, 1]]
)


def _write_store(path: Path, devices: dict[str, dict[str, Any]]) -> str:
    document = {
        "schema_version": 1,
        "devices": {key: {"info": {}, "tests": tests} for key, tests in devices.items()},
    }
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    path.write_text(text)
    return text


def _calls(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    path = pytester.path / "calls.jsonl"
    calls = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return calls


def test_the_first_trials_are_another_devices_best_and_the_run_stops_when_it_stalls(
    project: pytest.Pytester, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=WIDE)
    _write_store(project.path / "autotune.json", {"host:another machine": {NODE: _entry(SOURCE)}})
    result = project.runpytest("--autotune", NODE)
    result.assert_outcomes(passed=1)
    calls = _calls(project)
    assert calls[:3] == SOURCE_BEST
    result.stdout.fnmatch_lines(
        ["*test_w[[]1]*", "      [[]warm start: 1 device, 6 trials; stopped early: no gain*"]
    )
    entry = json.loads((project.path / "autotune.json").read_text())["devices"][host_key()]["tests"][NODE]
    assert entry["config"] == {"A": 3, "B": 3}
    # the source's best is the optimum: nothing gains 5% over 20 trials, so the run stops once the
    # design (3) and 30 more trials ran, not at the budget of 60
    assert entry["tuning"]["trials"] == 33
    assert entry["history"]["trials"][0] == [1.0, 3, 3]


def test_transfer_off_tunes_from_scratch(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=WIDE)
    _write_store(project.path / "autotune.json", {"host:another machine": {NODE: _entry(SOURCE)}})
    result = project.runpytest("--autotune", "--autotune-transfer=off", NODE)
    result.assert_outcomes(passed=1)
    assert _calls(project)[:3] != SOURCE_BEST
    assert "warm start" not in result.stdout.str()
    entry = json.loads((project.path / "autotune.json").read_text())["devices"][host_key()]["tests"][NODE]
    assert entry["tuning"]["trials"] == 60


def test_a_sibling_parametrization_warm_starts_the_next(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=WIDE)
    project.runpytest("--autotune", "--autotune-transfer=off", NODE).assert_outcomes(passed=1)
    first = _calls(project)
    best = json.loads((project.path / "autotune.json").read_text())["devices"][host_key()]["tests"][NODE]
    result = project.runpytest("--autotune", "test_k.py::test_w[2]")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_w[[]2]*", "      [[]warm start: 1 sibling, 60 trials*"])
    assert _calls(project)[0] == dict(zip("AB", best["history"]["trials"][0][1:], strict=True)) != first[0]


def test_an_entry_without_history_gives_its_configuration(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=WIDE)
    _write_store(project.path / "autotune.json", {"host:old": {NODE: _entry(config={"A": 7, "B": 2})}})
    result = project.runpytest("--autotune", NODE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*[[]warm start: 1 device, 1 trial*"])
    assert _calls(project)[0] == {"A": 7, "B": 2}


def test_bad_sources_are_skipped_with_warnings_naming_them(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=WIDE)
    newer = _entry({"version": 99, "rows": "a layout of the future"})
    damaged = _entry()
    damaged["baseline"]["median"] = "fast"
    store = project.path / "autotune.json"
    _write_store(
        store,
        {
            "host:newer": {NODE: newer},
            "host:damaged": {NODE: damaged},
            "host:torn": {NODE: _entry(_history([[1.0, 3]]))},
            "host:other space": {NODE: _entry(_history([[1.0, 1, 2]], params=("X", "Y")), {"X": 1, "Y": 2})},
        },
    )
    before = store.read_text()
    project.makeini("[pytest]\nautotune_transfer_from = missing.json, broken.json\n")
    (project.path / "broken.json").write_text("{not json")
    result = project.runpytest("--autotune", NODE)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "AutotuneTransferWarning" in out
    for expected in (
        "warm start: skipped device 'host:damaged': ",
        "field 'baseline.median' must be a number",
        f"warm start: ignored the history of {store}: entry '{NODE}' of device 'host:newer' "
        "(left as it is in the file): its version 99 is newer",
        f"ignored the history of {store}: entry '{NODE}' of device 'host:torn': it is damaged: "
        "'trials': a row must list 3 values",
        f"warm start of {NODE}: skipped device 'host:other space': none of its configurations fits",
        f"--autotune-transfer-from: {project.path / 'missing.json'} does not exist; not used",
        f"--autotune-transfer-from: not used: {project.path / 'broken.json'}: not valid JSON",
    ):
        assert expected in " ".join(out.split()), expected
    # the newer and torn histories still give their entries' configurations
    result.stdout.fnmatch_lines(["*[[]warm start: 2 devices, 2 trials*"])
    after = json.loads(store.read_text())
    untouched = json.loads(before)["devices"]
    for device in ("host:newer", "host:damaged", "host:torn", "host:other space"):
        assert after["devices"][device] == untouched[device]
    assert '"rows": "a layout of the future"' in store.read_text()


def test_histories_shipped_in_another_file_warm_start_and_leave_check_runs_alone(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_k=WIDE)
    shipped = _write_store(project.path / "shipped.json", {"lab-a: some device": {NODE: _entry(SOURCE)}})
    project.makeini("[pytest]\nautotune_transfer_from = shipped.json\n")
    checked = project.runpytest(NODE)
    checked.assert_outcomes(passed=1)
    checked.stdout.fnmatch_lines(["*missing (tune: pytest --autotune=missing): 1*"])
    assert _calls(project)[0] == {"A": 1, "B": 1}  # the declared default, not another device's choice
    result = project.runpytest("--autotune", NODE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*[[]warm start: 1 device, 6 trials*"])
    assert _calls(project)[:3] == SOURCE_BEST
    assert (project.path / "shipped.json").read_text() == shipped
    assert list(json.loads((project.path / "autotune.json").read_text())["devices"]) == [host_key()]


def _block(lines: list[str], nodeid: str) -> range:
    """The lines of ``nodeid``'s entry in the store's text."""
    start = lines.index(f'        "{nodeid}": {{')
    end = next(i for i in range(start, len(lines)) if lines[i] in ("        },", "        }"))
    return range(start, end + 1)


def test_re_tuning_one_test_changes_only_its_own_lines(
    project: pytest.Pytester, two_tests: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    store = project.path / "autotune.json"
    before = store.read_text().splitlines()
    assert "              [1.0, 3, 3]," in before  # one trial per line
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=2")
    project.runpytest("--autotune", "test_k.py::test_a").assert_outcomes(passed=1)
    after = store.read_text().splitlines()
    changed = [
        (i1, i2)
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=before, b=after).get_opcodes()
        if tag != "equal"
    ]
    assert changed
    own = _block(before, "test_k.py::test_a")
    assert all(own.start <= i1 and i2 <= own.stop for i1, i2 in changed)
    other = _block(before, "test_k.py::test_b")
    assert [before[i] for i in other] == [after[i] for i in _block(after, "test_k.py::test_b")]


def test_a_bad_history_is_warned_about_once_and_siblings_tuned_before_are_sources(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_k=WIDE.replace('"n", [1, 2]', '"n", [1, 2, 3]'))
    newer = _entry({"version": 99})
    _write_store(project.path / "autotune.json", {host_key(): {"test_k.py::test_w[3]": newer}})
    result = project.runpytest("--autotune", NODE, "test_k.py::test_w[2]")
    result.assert_outcomes(passed=2)
    # the second also starts from the first, tuned earlier in the session
    result.stdout.fnmatch_lines(
        [
            "*test_w[[]1]*",
            "      [[]warm start: 1 sibling, 1 trial;*",
            "*test_w[[]2]*",
            "      [[]warm start: 2 siblings, 32 trials;*",
        ]
    )
    summary = result.stdout.str().split("warnings summary")[1]
    assert summary.count("its version 99 is newer") == 1
    assert "test_k.py::test_w[2]" not in summary.split("its version 99")[0]


SEARCHED = """
from pytest_autotune import Interval, tunable

@tunable(A=Interval(1, 8, default=1), B=Interval(1, 8, default=1), strategy="bo", budget=40, seed=1)
def test_s(autotune):
    autotune.measure(lambda: None)
"""
#: A sibling device searched the whole space (the fake timer's bowl, relative to its best).
WHOLE_SPACE = _history(
    sorted([1.0 + (a - 3) ** 2 + (b - 3) ** 2, a, b] for a in range(1, 9) for b in range(1, 9))
)


def _converged_after(result: pytest.RunResult) -> int:
    return int(result.stdout.str().split("stopped: converged after ")[1].split()[0])


def test_a_space_searched_on_a_sibling_device_stops_early_converged_and_says_so(
    project: pytest.Pytester,
) -> None:
    # issue 47 item 3: the warm-started model already knows the space, so it expects too little
    # of the budget left after a few trials (bo option converge) and stops, naming its source.
    # In subprocesses: the Bayesian engine's libraries cannot be loaded twice in one process.
    node = "test_k.py::test_s"
    project.makepyfile(test_k=SEARCHED)
    _write_store(project.path / "autotune.json", {"host:sibling gpu": {node: _entry(WHOLE_SPACE)}})
    warm = project.runpytest_subprocess("--autotune", node)
    warm.assert_outcomes(passed=1)
    warm.stdout.fnmatch_lines(
        [
            "*test_s: tuned, * trials (ok *) in *s (stopped: converged): *",
            "      [[]warm start: 1 device, 64 trials; stopped: converged after * trials (warm start from "
            "device 'host:sibling gpu'; its model expected too little from the rest of the budget*",
        ]
    )
    assert "stopped early" not in warm.stdout.str()  # the converge rule, not the stall rule
    entry = json.loads((project.path / "autotune.json").read_text())["devices"][host_key()]["tests"][node]
    assert entry["config"] == {"A": 3, "B": 3}
    assert entry["tuning"]["trials"] == _converged_after(warm) <= 10
    (project.path / "autotune.json").unlink()
    cold = project.runpytest_subprocess("--autotune", "--autotune-transfer=off", node)
    cold.assert_outcomes(passed=1)
    assert "warm start" not in cold.stdout.str()
    cold_trials = json.loads((project.path / "autotune.json").read_text())["devices"][host_key()]["tests"]
    assert cold_trials[node]["tuning"]["trials"] > _converged_after(warm)  # 15 against 7
