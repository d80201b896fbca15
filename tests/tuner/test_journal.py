"""Journal and resume: a killed run continues where it stopped, with no trial repeated."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Space
from pytest_autotune.tuning.journal import JournalError, JournalMismatchError, read_journal
from pytest_autotune.tuning.tuner import Tuner

Objective = Callable[[dict[str, Any]], Outcome]


def counting(objective: Objective) -> tuple[Objective, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []

    def wrapped(config: dict[str, Any]) -> Outcome:
        calls.append(dict(config))
        return objective(config)

    return wrapped, calls


def cut_last_line_in_half(path: Path) -> None:
    """Simulate a kill in the middle of writing the last trial."""
    data = path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: last_start + (len(data) - last_start) // 2])


def test_resume_after_a_torn_write_equals_an_uninterrupted_run(
    tmp_path: Path, toy_space: Space, toy_objective: Objective
) -> None:
    # every strategy's resume is checked by the conformance suite; this is about the torn line
    strategy = "bandit"
    reference = Tuner(toy_space, strategy, abort=30, seed=11).run(toy_objective)

    journal = tmp_path / "run.jsonl"
    first = Tuner(toy_space, strategy, abort=12, seed=11, journal=journal)
    first.run(toy_objective)
    first.close()
    cut_last_line_in_half(journal)  # trial 11 is lost: it will be evaluated again, nothing else

    objective, calls = counting(toy_objective)
    resumed_tuner = Tuner(toy_space, strategy, abort=30, seed=11, journal=journal)
    assert resumed_tuner.result.evaluations == 11
    assert resumed_tuner.result.resumed == 11
    resumed = resumed_tuner.run(objective)
    resumed_tuner.close()

    assert [(r.config, r.outcome) for r in resumed.history] == [
        (r.config, r.outcome) for r in reference.history
    ]
    assert len(calls) == 19
    assert calls == [r.config for r in reference.history[11:]]
    assert resumed.diverged == 0
    contents = read_journal(journal)
    assert len(contents.entries) == 30
    assert not contents.torn_tail


def test_resume_after_a_real_kill(tmp_path: Path) -> None:
    journal = tmp_path / "killed.jsonl"
    script = textwrap.dedent(
        f"""
        import os
        from pytest_autotune.space import Interval, Set, build_space
        from pytest_autotune.tuning.tuner import Tuner

        space = build_space({{"a": Interval(1, 20), "b": Set(1, 2, 4)}})
        done = 0

        def objective(config):
            global done
            if done == 9:
                os._exit(3)  # killed: no cleanup, no flush beyond what the tuner did
            done += 1
            return float(config["a"] * config["b"])

        Tuner(space, "anneal", abort=25, seed=4, journal={str(journal)!r}).run(objective)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    assert len(read_journal(journal).entries) == 9

    from pytest_autotune.space import Interval, Set, build_space

    space = build_space({"a": Interval(1, 20), "b": Set(1, 2, 4)})
    calls: list[dict[str, Any]] = []

    def objective(config: dict[str, Any]) -> float:
        calls.append(config)
        return float(config["a"] * config["b"])

    result = Tuner(space, "anneal", abort=25, seed=4, journal=journal).run(objective)
    reference = Tuner(space, "anneal", abort=25, seed=4).run(lambda c: float(c["a"] * c["b"]))
    assert len(calls) == 16
    assert [r.config for r in result.history] == [r.config for r in reference.history]
    keys = [tuple(r.config.values()) for r in result.history]
    assert len(set(keys)) == 25


def test_seed_none_adopts_the_journal_seed(
    tmp_path: Path, toy_space: Space, toy_objective: Objective
) -> None:
    journal = tmp_path / "j.jsonl"
    first = Tuner(toy_space, "random", abort=5, journal=journal)
    first.run(toy_objective)
    first.close()
    again = Tuner(toy_space, "random", abort=8, journal=journal)
    assert again.seed == first.seed
    assert again.run(toy_objective).evaluations == 8


def test_a_different_job_is_refused_or_set_aside(
    tmp_path: Path, toy_space: Space, toy_objective: Objective
) -> None:
    journal = tmp_path / "j.jsonl"
    Tuner(toy_space, "random", abort=5, seed=1, journal=journal).run(toy_objective)
    with pytest.raises(JournalMismatchError, match=r"j\.jsonl: journal of a different tuning job \(seed: 1"):
        Tuner(toy_space, "random", abort=5, seed=2, journal=journal)
    with pytest.raises(JournalMismatchError, match="strategy: 'random' in the journal, 'anneal' now"):
        Tuner(toy_space, "anneal", abort=5, seed=1, journal=journal)
    with pytest.raises(JournalMismatchError, match="maximize"):
        Tuner(toy_space, "random", abort=5, seed=1, journal=journal, maximize=True)
    fresh = Tuner(toy_space, "random", abort=3, seed=2, journal=journal, on_journal_mismatch="restart")
    assert fresh.result.evaluations == 0
    fresh.run(toy_objective)
    fresh.close()
    kept = tmp_path / "j.jsonl.1.old"
    assert len(read_journal(kept).entries) == 5
    assert len(read_journal(journal).entries) == 3


def test_corrupt_lines_are_errors_naming_file_and_line(
    tmp_path: Path, toy_space: Space, toy_objective: Objective
) -> None:
    journal = tmp_path / "j.jsonl"
    Tuner(toy_space, "random", abort=4, seed=1, journal=journal).run(toy_objective)
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text(lines[0] + lines[1] + "{not json\n" + "".join(lines[2:]))
    with pytest.raises(JournalError, match=r"j\.jsonl: line 3 is not valid JSON"):
        Tuner(toy_space, "random", abort=4, seed=1, journal=journal)
    journal.write_text('{"format": "something else"}\n')
    with pytest.raises(JournalError, match="not a pytest-autotune journal"):
        Tuner(toy_space, "random", abort=4, seed=1, journal=journal)
    header = json.loads(lines[0])
    journal.write_text(json.dumps({**header, "version": 99}) + "\n")
    with pytest.raises(JournalError, match="version 99 is newer"):
        Tuner(toy_space, "random", abort=4, seed=1, journal=journal)
    record = json.loads(lines[1])
    record["config"]["x"] = 1000
    journal.write_text(lines[0] + json.dumps(record) + "\n")
    with pytest.raises(JournalError, match=r"trial 0: .* is not in the space"):
        Tuner(toy_space, "random", abort=4, seed=1, journal=journal)


def test_a_torn_header_starts_fresh(tmp_path: Path, toy_space: Space, toy_objective: Objective) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_text('{"format": "pytest-autotune-jou')
    result = Tuner(toy_space, "random", abort=3, seed=1, journal=journal).run(toy_objective)
    assert result.evaluations == 3
    assert len(read_journal(journal).entries) == 3


def test_every_trial_is_on_disk_when_tell_returns(
    tmp_path: Path, toy_space: Space, toy_objective: Objective
) -> None:
    journal = tmp_path / "j.jsonl"
    tuner = Tuner(toy_space, "random", abort=5, seed=1, journal=journal)
    for n in range(1, 4):
        trial = tuner.ask()
        assert trial is not None
        tuner.tell(trial, toy_objective(trial.config))
        entries = read_journal(journal).entries
        assert len(entries) == n
        assert entries[-1].config == trial.config
    tuner.close()
