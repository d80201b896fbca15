"""A file's text as committed at a git ref, asked of the ``git`` command (as the store's commit record is)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_autotune.commands.errors import CommandError

__all__ = ["text_at"]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git args`` in ``cwd``; its output decoded as text (invalid bytes replaced: ids and messages)."""
    done = _git_bytes(cwd, *args)
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    )


def _git_bytes(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CommandError(f"cannot run git: {exc}") from None


def text_at(path: Path, ref: str) -> tuple[bytes | None, str]:
    """The bytes of ``path`` at ``ref`` (None when the file did not exist there; the store's reader
    decodes them, and says so when they are no UTF-8) and the commit's short id;
    :class:`CommandError` outside a repository or for a ref that names no commit."""
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
    shown = _git_bytes(folder, "show", f"{commit.stdout.strip()}:{relative}")
    short = commit.stdout.strip()[:7]
    if shown.returncode != 0:
        return None, short
    return shown.stdout, short
