"""``git`` in a test repository, with a fixed committer, for the tests of ``--autotune-compare``."""

import subprocess
from pathlib import Path


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
