"""REF's tree for ``--autotune-compare``: resolved at start-up, exported aside, then removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_autotune.plugin.compare import git_ref
from pytest_autotune.plugin.compare.git_ref import (
    REF_DIR_PREFIX,
    GitRefError,
    export_tree,
    remove_stale_trees,
    resolve_ref,
    uncommitted,
)
from tests.plugin.compare.git_commands import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two commits: ``first`` has a.txt = 1 and sub/b.txt; HEAD changes a.txt to 2."""
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "a.txt").write_text("1")
    (root / "sub" / "b.txt").write_text("b")
    (root / ".gitattributes").write_text("sub/* export-ignore\n")  # git archive would drop sub/
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    git(root, "tag", "first")
    (root / "a.txt").write_text("2")
    git(root, "commit", "-q", "-am", "second")
    return root


def state(repo: Path) -> tuple[str, str, str, bytes]:
    """Everything an export must leave alone: status, worktrees, HEAD, the index file."""
    return (
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "worktree", "list"),
        git(repo, "rev-parse", "HEAD"),
        (repo / ".git" / "index").read_bytes(),
    )


def test_the_tree_of_ref_is_exported_aside_and_removed(repo: Path, tmp_path: Path) -> None:
    (repo / "a.txt").write_text("working")  # uncommitted: not part of any ref
    (repo / "new.txt").write_text("untracked")
    before = state(repo)
    resolved = resolve_ref(repo / "sub", "first")  # from a subfolder: the top level is found
    assert resolved.toplevel == repo.resolve()
    assert resolved.commit == git(repo, "rev-parse", "first")
    with export_tree(resolved, tmp_path) as tree:
        assert tree.folder.name.startswith(f"{REF_DIR_PREFIX}{os.getpid()}-")
        assert (tree.path / "a.txt").read_text() == "1"
        assert (tree.path / "sub" / "b.txt").read_text() == "b"  # export-ignore does not apply
        assert not (tree.path / "new.txt").exists()
        assert tree.mirror(repo / "sub" / "b.txt") == tree.path / "sub" / "b.txt"
        assert tree.mirror(tmp_path / "elsewhere") is None
        assert state(repo) == before
    assert not tree.folder.exists()
    assert state(repo) == before


def test_a_failed_export_leaves_nothing_behind(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = git_ref._git

    def failing(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        if args[0] == "checkout-index":
            return subprocess.CompletedProcess(args, 128, "", "fatal: disk full")
        return real(cwd, *args, env=env)

    monkeypatch.setattr(git_ref, "_git", failing)
    exports = tmp_path / "exports"
    exports.mkdir()
    with pytest.raises(GitRefError, match=r"--autotune-compare=HEAD: cannot write the files .*disk full"):
        export_tree(resolve_ref(repo, "HEAD"), exports)
    assert list(exports.iterdir()) == []

    def interrupted(
        cwd: Path, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(git_ref, "_git", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export_tree(git_ref.ResolvedRef("HEAD", "0" * 40, repo), exports)
    assert list(exports.iterdir()) == []


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "no-such-branch",
            r"--autotune-compare=no-such-branch: no commit named 'no-such-branch' in .*fetch-depth",
        ),
        ("-x", r"expected a git reference"),
        ("", r"expected a git reference"),
    ],
)
def test_a_ref_that_names_no_commit_is_refused(repo: Path, ref: str, message: str) -> None:
    with pytest.raises(GitRefError, match=message):
        resolve_ref(repo, ref)


def test_a_folder_outside_a_repository_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GitRefError, match=r"--autotune-compare=HEAD: .* is not in a git repository"):
        resolve_ref(tmp_path, "HEAD")


def test_only_trees_of_dead_owners_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f"{REF_DIR_PREFIX}{int(dead.stdout)}-abc"
    mine = tmp_path / f"{REF_DIR_PREFIX}{os.getpid()}-abc"
    for path in (stale, mine):
        (path / "tree").mkdir(parents=True)
    assert remove_stale_trees(tmp_path) == [stale]
    assert mine.exists()


def test_uncommitted_changes_are_seen(repo: Path) -> None:
    assert not uncommitted(repo, repo / "a.txt")
    (repo / "a.txt").write_text("3")
    assert uncommitted(repo, repo / "a.txt")
    (repo / "c.txt").write_text("new")
    assert uncommitted(repo, repo / "c.txt")
    assert not uncommitted(repo, repo / "missing.txt")
