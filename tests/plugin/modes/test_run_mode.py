"""Each pytest process runs in one mode, chosen once from its options when the plugin is configured.

The project's conftest reads the mode (``config.stash[MODE]``) right after the plugin's configure
hook and again when each test is called, and writes both down: the mode is there before any
test is collected, and the tests are called in that very mode.
"""

from __future__ import annotations

import json
import os

import pytest

from pytest_autotune.plugin.workers.protocol import ENV_VAR, WorkerRole, WorkerSpec
from tests.plugin.compare.git_commands import git

RECORD_MODE = """

def _record(config, when):
    from pytest_autotune.plugin import MODE

    mode = config.stash[MODE]
    with open(config.rootpath / "modes.jsonl", "a") as out:
        out.write(json.dumps({"when": when, "name": mode.name, "id": id(mode)}) + "\\n")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    _record(config, "configure")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    _record(item.config, "call")
"""


def _modes(project: pytest.Pytester) -> list[dict[str, str]]:
    lines = (project.path / "modes.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _project(project: pytest.Pytester, two_tests: str) -> pytest.Pytester:
    project.makeconftest(
        "import json\n\nimport pytest\n" + (project.path / "conftest.py").read_text() + RECORD_MODE
    )
    project.makepyfile(test_k=two_tests)
    return project


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ((), "check"),
        (("--autotune",), "tune"),
        (("--autotune=missing",), "tune-missing"),
        (("--autotune-update-baseline",), "update-baseline"),
    ],
)
def test_the_options_choose_the_mode_once(
    project: pytest.Pytester, two_tests: str, options: tuple[str, ...], name: str
) -> None:
    _project(project, two_tests).runpytest(*options).assert_outcomes(passed=2)
    modes = _modes(project)
    assert [mode["when"] for mode in modes] == ["configure", "call", "call"]
    assert {mode["name"] for mode in modes} == {name}
    assert len({mode["id"] for mode in modes}) == 1  # one object: chosen once, not per test


def test_compare_chooses_the_compare_mode(project: pytest.Pytester, two_tests: str) -> None:
    _project(project, two_tests)
    git(project.path, "init", "-q")
    git(project.path, "add", ".")
    git(project.path, "commit", "-q", "-m", "base")
    project.runpytest("--autotune-compare=HEAD", "--collect-only")
    assert [mode["name"] for mode in _modes(project)] == ["compare"]


@pytest.mark.parametrize("role", ["trial", "baseline", "compare"])
def test_a_worker_serves_in_its_role(
    project: pytest.Pytester, two_tests: str, monkeypatch: pytest.MonkeyPatch, role: WorkerRole
) -> None:
    """A worker's mode comes from the spec its parent put in its environment (collected only here:
    serving needs a parent on the other end of the channel)."""
    _project(project, two_tests)
    read, write = os.pipe()
    try:
        monkeypatch.setenv(ENV_VAR, WorkerSpec("test_k.py::test_a", write, read, role).to_env())
        result = project.runpytest("--collect-only")
    finally:
        os.close(read)
        os.close(write)
    result.stdout.fnmatch_lines(["*test_a*"])
    assert "test_b" not in result.stdout.str()  # a worker keeps only the test it serves
    assert [mode["name"] for mode in _modes(project)] == [f"{role}-worker"]
