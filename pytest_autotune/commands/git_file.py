"""A file's text as committed at a git ref, asked of the ``git`` command (as the store's commit record is)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_autotune.commands.errors import CommandError

__all__ = ["text_at"]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise CommandError(f"cannot run git: {exc}") from None


def text_at(path: Path, ref: str) -> tuple[str | None, str]:
    """The text of ``path`` at ``ref`` (None when the file did not exist there) and the commit's
    short id; :class:`CommandError` outside a repository or for a ref that names no commit."""
    folder = path.resolve().parent
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise CommandError(f"{folder}: not in a git repository ({top.stderr.strip()})")
    commit = _git(folder, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit.returncode != 0 or ref.startswith("-"):
        raise CommandError(
            f"{ref!r} names no commit of {top.stdout.strip()} (try a branch, tag or commit id)"
        )
    relative = path.resolve().relative_to(Path(top.stdout.strip()).resolve()).as_posix()
    shown = _git(folder, "show", f"{commit.stdout.strip()}:{relative}")
    short = commit.stdout.strip()[:7]
    if shown.returncode != 0:
        return None, short
    return shown.stdout, short
