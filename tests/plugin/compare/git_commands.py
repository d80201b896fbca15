"""``git`` in a test repository, with a fixed committer, for the tests of ``--autotune-compare``."""

import os
import subprocess
from pathlib import Path
from typing import Any


def git(repo: Path, *args: str) -> str:
    """Run ``git args`` in ``repo``; its standard output, stripped (a failure raises)."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def committed_project(pytester: Any, monkeypatch: Any, conftest: str, tests: str) -> Any:
    """``pytester`` as a git repository for ``--autotune-compare``: ``conftest`` and ``test_k.py``
    (``tests``) committed, in-process tuning, no ``PYTEST_AUTOTUNE*`` settings from outside."""
    for name in list(os.environ):
        if name.startswith("PYTEST_AUTOTUNE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "none")
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_k=tests)
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-q", "-m", "base")
    return pytester
