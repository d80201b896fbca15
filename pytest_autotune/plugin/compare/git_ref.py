"""The tree of a git reference, written to a temporary folder, for ``--autotune-compare=REF``.

:func:`resolve_ref` checks at start-up that the rootdir is in a git repository and that ``REF``
names a commit there (a usage error otherwise, naming ``REF``); :func:`export_tree` writes that
commit's files to a new temporary folder; :meth:`RefTree.close` removes it.

The export reads the repository and writes nothing to it: ``git read-tree`` fills a temporary
index file (``GIT_INDEX_FILE``) and ``git checkout-index`` writes its files under the folder. This
is chosen over ``git worktree add``, which registers the worktree in the repository's metadata
(left behind when pytest is killed) and runs the user's ``post-checkout`` hook, and over
``git archive``, which leaves out the files that ``.gitattributes`` marks ``export-ignore``
(projects often mark their tests so). Folders of processes that died before their cleanup are
removed by the next export.

Neither writes the files of git submodules (a commit records only the submodule's commit). Each
submodule of the commit is exported the same way from the submodule's clone in the working tree,
at the commit REF records, nested ones too. A submodule that cannot be (not checked out here, or
its clone lacks that commit) is listed in :attr:`RefTree.submodules` with the reason, so the tests
under it are reported as not compared, and why, rather than as new.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pytest_autotune.plugin.workers.launch import remove_stale_dirs

__all__ = [
    "REF_DIR_PREFIX",
    "GitRefError",
    "RefTree",
    "ResolvedRef",
    "export_tree",
    "remove_stale_trees",
    "resolve_ref",
    "uncommitted",
]

#: Name prefix of an exported tree's folder, followed by the owning pytest's pid and a dash.
REF_DIR_PREFIX: Final = "pytest-autotune-ref-"
_GIT_SECONDS: Final = 300.0


class GitRefError(ValueError):
    """``REF`` cannot be compared against; the message names it and says why (a usage error)."""


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=_GIT_SECONDS,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitRefError(f"the git command is not installed ({exc})") from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitRefError(f"git {' '.join(args)} failed: {exc}") from exc


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no message"


@dataclass(frozen=True)
class ResolvedRef:
    """``ref`` as given, the commit it names, and the repository's top-level folder."""

    ref: str
    commit: str
    toplevel: Path


def resolve_ref(root: Path, ref: str) -> ResolvedRef:
    """The commit ``ref`` names in the git repository that holds ``root``; :class:`GitRefError` else."""
    if not ref.strip() or ref.startswith("-"):
        raise GitRefError(f"--autotune-compare={ref!r}: expected a git reference such as HEAD or origin/main")
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise GitRefError(
            f"--autotune-compare={ref}: {root} is not in a git repository ({_last_line(top.stderr)})"
        )
    toplevel = Path(top.stdout.strip()).resolve()
    found = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if found.returncode != 0 or not found.stdout.strip():
        raise GitRefError(
            f"--autotune-compare={ref}: no commit named {ref!r} in {toplevel} (a shallow clone may "
            "lack it: fetch it, e.g. actions/checkout with fetch-depth: 0)"
        )
    return ResolvedRef(ref, found.stdout.strip(), toplevel)


def remove_stale_trees(base: Path | None = None) -> list[Path]:
    """Remove exported trees under ``base`` (the temporary directory) whose owning pytest is dead."""
    return remove_stale_dirs(REF_DIR_PREFIX, base)


@dataclass
class RefTree:
    """The files of one commit in a temporary folder (``path`` mirrors the repository's top level)."""

    resolved: ResolvedRef
    folder: Path
    #: Submodules (paths relative to the top level) whose files could not be exported, and why.
    submodules: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        """The exported top level: the commit's counterpart of the repository's top-level folder."""
        return self.folder / "tree"

    def mirror(self, path: Path) -> Path | None:
        """The exported counterpart of ``path`` (a path in the user's repository), or None outside it."""
        try:
            relative = path.resolve().relative_to(self.resolved.toplevel)
        except ValueError:
            return None
        return self.path / relative

    def relative(self, exported: Path) -> str | None:
        """``exported`` (a path in the exported tree) relative to its top level, with ``/``; None outside."""
        try:
            return exported.relative_to(self.path).as_posix()
        except ValueError:
            return None

    def missing_submodule(self, relative: str) -> str | None:
        """Why the file ``relative`` (to the top level) is not exported, when it lies in a submodule
        that could not be; None otherwise."""
        for path, why in self.submodules.items():
            if relative == path or relative.startswith(path.rstrip("/") + "/"):
                return f"it lies in the git submodule {path}, whose files at this commit are not here: {why}"
        return None

    def close(self) -> None:
        """Remove the exported files (idempotent)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> RefTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def export_tree(resolved: ResolvedRef, base: Path | None = None) -> RefTree:
    """Write the files of ``resolved.commit`` to a new folder under ``base`` (the temporary directory).

    Nothing in the repository is written (see the module docstring). The folder is removed again
    when the export fails; otherwise call :meth:`RefTree.close`.
    """
    remove_stale_trees(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{REF_DIR_PREFIX}{os.getpid()}-", dir=base))
    tree = RefTree(resolved, folder)
    try:
        problem = _write_commit(resolved.toplevel, resolved.commit, tree.path, folder / "index")
        if problem is not None:
            raise GitRefError(
                f"--autotune-compare={resolved.ref}: cannot write the files of "
                f"{resolved.commit[:12]} ({problem})"
            )
        tree.path.mkdir(exist_ok=True)  # an empty commit has no files
        _export_submodules(
            resolved.toplevel, resolved.commit, tree.path, folder / "index", "", tree.submodules
        )
    except BaseException:
        tree.close()
        raise
    return tree


def _write_commit(repository: Path, commit: str, dest: Path, index: Path) -> str | None:
    """Write the files of ``commit`` of ``repository`` under ``dest``; what went wrong, or None."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    steps = (("read-tree", commit), ("checkout-index", "--all", "--force", f"--prefix={dest}{os.sep}"))
    try:
        for step in steps:
            done = _git(repository, *step, env=env)
            if done.returncode != 0:
                return f"git {step[0]}: {_last_line(done.stderr)}"
    finally:
        index.unlink(missing_ok=True)
    return None


#: Nesting of submodules followed at most (a cycle cannot be committed, but a clone may be odd).
_SUBMODULE_DEPTH: Final = 8


def _export_submodules(
    repository: Path,
    commit: str,
    dest: Path,
    index: Path,
    prefix: str,
    problems: dict[str, str],
    depth: int = 0,
) -> None:
    """Export the submodules ``commit`` records (module docstring); any that cannot be go to ``problems``."""
    listing = _git(repository, "ls-tree", "-r", "-z", commit)
    if listing.returncode != 0:
        return
    for entry in listing.stdout.split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) != 3 or parts[0] != "160000":
            continue
        sha, where = parts[2], prefix + path
        clone = repository / path
        if not (clone / ".git").exists():
            problems[where] = (
                f"the submodule is not checked out in the working tree (git submodule update --init {where})"
            )
            continue
        if _git(clone, "cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
            problems[where] = (
                f"its clone lacks the commit {sha[:12]} that this commit records "
                f"(git -C {where} fetch, or git submodule update)"
            )
            continue
        problem = _write_commit(clone, sha, dest / path, index)
        if problem is not None:
            problems[where] = problem
        elif depth < _SUBMODULE_DEPTH:
            _export_submodules(clone, sha, dest / path, index, f"{where}/", problems, depth + 1)


def uncommitted(toplevel: Path, path: Path) -> bool:
    """Whether ``path`` differs from the last commit (changed, staged, or new and untracked)."""
    done = _git(toplevel, "status", "--porcelain", "--untracked-files=all", "--", str(path))
    return done.returncode == 0 and bool(done.stdout.strip())
