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


# -- issue 23: trials journaled as started, and the journal lock ------------------------------------------
def _small_tuner(journal: Path) -> Tuner:
    from pytest_autotune import Interval, build_space

    return Tuner(build_space({"A": Interval(1, 4)}), "exhaustive", seed=1, journal=journal)


def test_a_started_trial_that_never_finished_is_a_runtime_failure_on_resume(tmp_path: Path) -> None:
    from pytest_autotune.tuning.tuner import UNFINISHED_DETAIL

    journal = tmp_path / "j.jsonl"
    tuner = _small_tuner(journal)
    first = tuner.ask()
    assert first is not None
    tuner.start(first)
    tuner.tell(first, 1.0)
    crashing = tuner.ask()
    assert crashing is not None
    tuner.start(crashing)
    tuner.close()  # the process "dies" here: no outcome, no cancellation
    assert [s.config for s in read_journal(journal).unfinished] == [crashing.config]

    resumed = _small_tuner(journal)
    history = resumed.history
    assert [(r.config, r.outcome.label) for r in history] == [
        (first.config, "ok"),
        (crashing.config, "runtime"),
    ]
    assert history[1].outcome.detail == UNFINISHED_DETAIL
    evaluated: list[dict[str, Any]] = []
    resumed.run(lambda c: evaluated.append(dict(c)) or 1.0)
    assert crashing.config not in evaluated
    assert len(evaluated) == 2
    assert read_journal(journal).unfinished == []  # the failure is journaled, read as such later


def test_a_cancelled_start_is_evaluated_again_on_resume(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    tuner = _small_tuner(journal)
    trial = tuner.ask()
    assert trial is not None
    tuner.start(trial)
    tuner.cancel(trial)  # an interrupt: no outcome, but not a crash either
    tuner.close()
    assert read_journal(journal).unfinished == []
    evaluated: list[dict[str, Any]] = []
    _small_tuner(journal).run(lambda c: evaluated.append(dict(c)) or 1.0)
    assert evaluated[0] == trial.config


def test_a_version_1_journal_still_resumes(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    with _small_tuner(journal) as tuner:
        trial = tuner.ask()
        assert trial is not None
        tuner.tell(trial, 1.0)
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    journal.write_text("\n".join([json.dumps({**header, "version": 1}), *lines[1:]]) + "\n")
    assert len(_small_tuner(journal).history) == 1


def test_the_journal_lock_names_the_holder_and_is_released(tmp_path: Path) -> None:
    import os

    from pytest_autotune.tuning.journal import JournalBusy, hold_journal

    journal = tmp_path / "j.jsonl"
    busy = pytest.raises(JournalBusy, match=f"another process \\(pid {os.getpid()}\\)")
    with hold_journal(journal), busy, hold_journal(journal, wait=0.2):
        pass
    with hold_journal(journal, wait=0.2):  # released when the holder left
        pass
    assert not journal.exists()  # only the lock file was created


def test_the_journal_lock_file_is_removed_when_released(tmp_path: Path) -> None:
    from pytest_autotune.tuning.journal import hold_journal

    journal = tmp_path / "j.jsonl"
    with hold_journal(journal):
        assert (tmp_path / "j.jsonl.lock").exists()
    assert list(tmp_path.iterdir()) == []


def test_a_waiter_on_a_removed_lock_file_takes_the_new_one(tmp_path: Path) -> None:
    """Processes racing for one journal never hold it at once, though each holder removes the file."""
    import multiprocessing

    journal = tmp_path / "j.jsonl"
    log = tmp_path / "log.txt"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_hold_and_log, args=(journal, log)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    events = log.read_text().split()
    assert len(events) == 4 * 2 * 5
    assert events == ["in", "out"] * (len(events) // 2)  # never two "in" in a row
    assert not (tmp_path / "j.jsonl.lock").exists()


def _hold_and_log(journal: Path, log: Path) -> None:
    import time

    from pytest_autotune.tuning.journal import hold_journal

    for _ in range(5):
        with hold_journal(journal, wait=30):
            with log.open("a") as out:
                out.write("in\n")
            time.sleep(0.01)
            with log.open("a") as out:
                out.write("out\n")
