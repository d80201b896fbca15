"""``python -m pytest_autotune show`` and ``diff``: the store read outside a test run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.commands import main

DEVICE = "host:cpu"


def _entry(config: dict[str, Any], median: float, noise: float | None = None) -> dict[str, Any]:
    baseline: dict[str, Any] = {"median": median, "unit": "s"}
    if noise is not None:
        baseline.update(noise=noise, processes=5)
    return {"config": config, "space_hash": "abc", "baseline": baseline}


def _store(path: Path, tests: dict[str, dict[str, Any]]) -> None:
    data = {"schema_version": 1, "devices": {DEVICE: {"tests": tests}}}
    path.write_text(json.dumps(data, indent=2) + "\n")


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose first commit holds a store of three entries."""
    _git(tmp_path, "init", "-q")
    _store(
        tmp_path / "autotune.json",
        {
            "t.py::test_a": _entry({"BS": 64, "WPT": 4}, 1e-3),
            "t.py::test_b": _entry({"BS": 32}, 2e-3),
            "t.py::test_c": _entry({"BS": 8}, 5e-4),
        },
    )
    _git(tmp_path, "add", "autotune.json")
    _git(tmp_path, "commit", "-qm", "tuned")
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_show_prints_each_entry(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(repo / "autotune.json", {"t.py::test_a": _entry({"BS": 64, "WPT": 4}, 1e-3, noise=0.3)})
    status, out, _ = _run(capsys, "show", "--file", str(repo / "autotune.json"))
    assert status == 0
    lines = out.splitlines()
    assert lines[2] == f"device {DEVICE}"
    assert lines[3].split() == ["test", "configuration", "baseline", "tolerance", "tuned", "commit"]
    assert lines[5].split() == ["t.py::test_a", "BS=64,", "WPT=4", "1ms", "60%", "(noise", "30%)", "-", "-"]


def test_show_selects_tests_and_devices(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(repo / "autotune.json")
    status, out, _ = _run(capsys, "show", "--file", store, "--device", DEVICE, "test_b")
    assert status == 0
    assert [line.split()[0] for line in out.splitlines()[5:]] == ["t.py::test_b"]
    status, _, err = _run(capsys, "show", "--file", store, "--device", "gpu:x")
    assert status == 1
    assert f"no device 'gpu:x' (devices: {DEVICE})" in err
    status, _, err = _run(capsys, "show", "--file", store, "test_zzz")
    assert (status, "no entry matches test_zzz" in err) == (1, True)


def test_show_names_a_missing_or_damaged_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "show", "--file", str(tmp_path / "autotune.json"))
    assert status == 1
    assert "autotune.json: no such file (tune first: pytest --autotune; or pass --file)" in err
    (tmp_path / "autotune.json").write_text('{"schema_version": 1, "devices": {')
    status, _, err = _run(capsys, "show", "--file", str(tmp_path / "autotune.json"))
    assert status == 1
    assert "not valid JSON" in err


def test_diff_lists_added_dropped_retuned_and_rebaselined(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(
        repo / "autotune.json",
        {
            "t.py::test_a": _entry({"BS": 128, "WPT": 4}, 8e-4),  # re-tuned
            "t.py::test_b": _entry({"BS": 32}, 2.2e-3),  # new baseline
            "t.py::test_d": _entry({"BS": 16}, 3e-4),  # added; test_c dropped
        },
    )
    status, out, _ = _run(capsys, "diff", "HEAD", "--file", str(repo / "autotune.json"))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].endswith(": 1 added, 1 dropped, 2 changed, 0 unchanged")
    rows = {line.split("  ")[1].strip(): " ".join(line.split()) for line in lines[3:]}
    assert rows["t.py::test_a"] == (
        f"{DEVICE} t.py::test_a re-tuned BS: 64 -> 128 1ms -> 800us (-20.0%, beyond the old tolerance 10%) "
        "10% baseline re-measured; configuration edited"
    )
    assert rows["t.py::test_b"] == (
        f"{DEVICE} t.py::test_b baseline BS=32 2ms -> 2.2ms (+10.0%, within the old tolerance 10%) 10% "
        "baseline re-measured"
    )
    assert rows["t.py::test_c"] == f"{DEVICE} t.py::test_c dropped BS=8 500us 10% test gone"
    assert rows["t.py::test_d"] == f"{DEVICE} t.py::test_d added BS=16 300us 10% new test"


def test_diff_writes_markdown_for_a_pull_request(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(repo / "autotune.json", {"t.py::test_a|x": _entry({"BS": 64}, 1e-3)})
    status, out, _ = _run(capsys, "diff", "HEAD", "--md", "--file", str(repo / "autotune.json"))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("**")
    assert lines[0].endswith("1 added, 3 dropped, 0 changed, 0 unchanged**")
    assert lines[2] == f"Device `{DEVICE}`:"
    assert lines[4] == "| change | test | why | configuration | baseline | tolerance (noise) |"
    assert lines[5] == "|---|---|---|---|---|---|"
    assert "| added | `t.py::test_a\\|x` | new test | BS=64 | 1ms | 10% |" in lines


def _tuned(
    config: dict[str, Any], median: float, noise: float, *, trials: int, space: str = "abc"
) -> dict[str, Any]:
    entry = _entry(config, median, noise)
    entry["space_hash"] = space
    entry["tuning"] = {
        "trials": trials,
        "counts": {"ok": trials},
        "strategy": "bo",
        "seed": 1,
        "duration": 9.0,
    }
    return entry


def test_diff_md_gives_the_noise_says_why_and_groups_by_device(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 44: +40.8% on an unchanged configuration read like a regression; no reason for a re-tune;
    the long device key in every row."""
    gpu = "NVIDIA H200 / driver 570 / a long device key"
    old = {
        "t.py::test_a": _tuned({"BS": 64}, 1e-3, 0.41, trials=20),
        "t.py::test_b": _tuned({"BS": 32}, 2e-3, 0.02, trials=20),
        "t.py::test_c": _tuned({"BS": 8}, 5e-4, 0.02, trials=20),
    }
    data = {"schema_version": 1, "devices": {DEVICE: {"tests": old}, gpu: {"tests": {}}}}
    (repo / "autotune.json").write_text(json.dumps(data))
    _git(repo, "commit", "-qam", "noisy")
    new = {
        "t.py::test_a": {**old["t.py::test_a"], "baseline": {"median": 1.408e-3, "unit": "s", "noise": 0.3}},
        "t.py::test_b": _tuned({"BS": 64}, 1.5e-3, 0.02, trials=30, space="def"),
        "t.py::test_c": old["t.py::test_c"],
    }
    gpu_tests = {"t.py::test_a": _tuned({"BS": 256}, 1e-5, 0.02, trials=30)}
    data = {"schema_version": 1, "devices": {DEVICE: {"tests": new}, gpu: {"tests": gpu_tests}}}
    (repo / "autotune.json").write_text(json.dumps(data))
    status, out, _ = _run(capsys, "diff", "HEAD", "--md", "--file", str(repo / "autotune.json"))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].endswith("1 added, 0 dropped, 2 changed, 1 unchanged**")
    assert [line for line in lines if line.startswith("Device ")] == [
        f"Device `{gpu}`:",
        f"Device `{DEVICE}`:",
    ]
    assert sum(gpu in line for line in lines) == 1  # the key heads its table, no row repeats it
    rebaselined = next(line for line in lines if "`t.py::test_a`" in line and "baseline re-measured" in line)
    assert rebaselined == (
        "| baseline | `t.py::test_a` | baseline re-measured | BS=64 | "
        "1ms -> 1.41ms (+40.8%, within the old tolerance 82%) | 60% (noise 30%) |"
    )
    retuned = next(line for line in lines if "`t.py::test_b`" in line)
    assert (
        "| re-tuned | `t.py::test_b` | declaration changed (space hash); tuned again (30 trials, bo) |"
        in retuned
    )
    assert "beyond the old tolerance 10%" in retuned
    assert "| added | `t.py::test_a` | first entry on this device | BS=256 | 10us | 10% (noise 2%) |" in lines


def test_diff_with_nothing_changed_says_so(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "diff", "HEAD", "--file", str(repo / "autotune.json"))
    assert status == 0
    assert out.strip().endswith("0 added, 0 dropped, 0 changed, 3 unchanged")


def test_diff_errors_name_the_bad_ref_and_the_damaged_side(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(repo / "autotune.json")
    status, _, err = _run(capsys, "diff", "no-such-branch", "--file", store)
    assert status == 1
    assert "'no-such-branch' names no commit of" in err
    (repo / "autotune.json").write_text("{")
    _git(repo, "commit", "-qam", "broken")
    _store(repo / "autotune.json", {})
    status, _, err = _run(capsys, "diff", "HEAD", "--file", store)
    assert status == 1
    assert "at HEAD: HEAD:autotune.json: not valid JSON" in err


def test_diff_of_a_file_absent_at_the_ref(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(repo / "other.json", {"t.py::test_a": _entry({"BS": 64}, 1e-3)})
    status, out, _ = _run(capsys, "diff", "HEAD", "--file", str(repo / "other.json"))
    assert status == 0
    assert "(absent there: every entry is new): 1 added" in out.splitlines()[0]


def test_python_dash_m_dispatches_show_and_keeps_merge(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "show"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "t.py::test_a" in done.stdout
    merged = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", "missing.json"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert merged.returncode == 1
    assert "missing.json: no such file" in merged.stderr


def test_help_lists_every_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")] == [
        "show",
        "diff",
        "export",
        "merge",
    ]
