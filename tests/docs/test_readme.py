"""README is the front page: its two set-up commands are what CI runs, its first test is the
documented example, its links resolve, and it stays short."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def commands() -> list[str]:
    """The commands of README's first code block, by their ``# N.`` comments."""
    block = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    return [lines[i + 1] for i, line in enumerate(lines) if re.match(r"# \d\. ", line)]


def test_the_two_setup_commands_come_first() -> None:
    tune, suite = commands()
    assert tune.endswith(".venv/bin/python -m pytest --autotune example_kernels/")
    assert '-e ".[pocl]"' in tune
    assert suite.endswith(".venv/bin/python -m pytest -n 2 tests/")


def test_ci_runs_readme_command_two() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    _, suite = commands()
    for step in suite.split(" && "):
        step = step.replace(" -m pip install ", " -m pip install -q ")
        assert step in ci, f"README command 2's step {step!r} is not in .ci/run"
    assert "sphinx -W" in ci  # the documentation is built strictly


def test_the_first_test_is_the_documented_example() -> None:
    fence = r"<!-- first-test:start[^\n]*\n```python\n(.*?)```\n<!-- first-test:end -->"
    block = re.search(fence, README, re.DOTALL)
    assert block is not None
    assert block.group(1) == (ROOT / "docs" / "examples" / "test_scale.py").read_text(encoding="utf-8")


def test_relative_links_resolve() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if "://" not in t]
    assert local, "README links into the documentation"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing


def test_in_page_anchors_name_headings() -> None:
    slugs = {
        re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", README, re.MULTILINE)
    }
    anchors = re.findall(r"\]\(#([^)]+)\)", README)
    assert anchors
    assert set(anchors) <= slugs


def test_it_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 160
    # the mode's truth: a bare --autotune tunes every selected test, not only those without an entry
    assert "only those without an up-to-date entry" not in README
