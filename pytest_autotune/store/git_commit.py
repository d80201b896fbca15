"""The git commit the entries of ``autotune.json`` were measured at (id, branch, dirty).

Each entry written records it (``commit_info``), as does the ``--autotune-json`` export, so that a
reviewer can tell which code a baseline belongs to. Asked of the ``git`` command, not a library: it
is there wherever the repository is, and a missing or failing ``git`` only leaves the record empty.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

__all__ = ["commit_info"]


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_info(root: Path) -> dict[str, Any]:
    """The git commit the entries were measured at (id, branch, dirty); empty outside a repository."""
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return {}
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {
        "id": commit,
        "branch": _git(root, "rev-parse", "--abbrev-ref", "HEAD") or "",
        "dirty": bool(status),
    }
