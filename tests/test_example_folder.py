"""``example_kernels/`` copied into another project collects with pytest's default import mode.

This repository runs pytest with ``--import-mode=importlib``; a user who copies the folder does not.
Under the default (``prepend``) mode two test files of the same name in folders without
``__init__.py`` (``test_gemm.py`` at the top and under ``cuda/``) are "import file mismatch"
errors (issue 44).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).resolve().parents[1] / "example_kernels"


def test_the_example_folder_collects_in_a_fresh_project_with_the_default_import_mode(
    pytester: pytest.Pytester,
) -> None:
    copied = pytester.path / "tests" / "example_kernels"
    shutil.copytree(EXAMPLES, copied, ignore=shutil.ignore_patterns("__pycache__", "autotune.json"))
    names = sorted(p.relative_to(copied).as_posix() for p in copied.rglob("test_*.py"))
    stems = [Path(name).name for name in names]
    assert len(set(stems)) < len(stems)  # the folder does hold same-named test files
    chosen = [str(copied / name) for name in names if Path(name).parent.name in ("", "cuda")]
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--import-mode=prepend", *chosen)
    assert "import file mismatch" not in result.stdout.str()
    assert result.ret == 0, result.stdout.str()[-2000:]
    collected = [line for line in result.stdout.lines if "::" in line]
    assert {line.split("::")[0] for line in collected} == {
        f"tests/example_kernels/{name}" for name in names if Path(name).parent.name in ("", "cuda")
    }
