"""docs/reference/options.md is generated from the option table and cannot drift from it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_autotune.plugin.option_table import OPTIONS

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "docs" / "gen_options.py"


def load_generator() -> ModuleType:
    """docs/gen_options.py as a module (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_options", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_what_the_table_generates() -> None:
    generator = load_generator()
    assert generator.PAGE.read_text(encoding="utf-8") == generator.render(), (
        "docs/reference/options.md is stale: run `python docs/gen_options.py`"
    )


def test_every_option_has_a_section_with_its_three_spellings() -> None:
    page = load_generator().render()
    for option in OPTIONS:
        assert f"\n## {option.flag}\n" in page
        assert f"`{option.ini}`" in page
        assert f"`{option.env}`" in page
        if option.policy_key:
            assert f"`{option.policy_key}`" in page


def test_help_text_is_shown_as_pytest_prints_it() -> None:
    page = load_generator().render()
    assert "%%" not in page  # argparse's escape is undone
    assert "median:10%" in page
    assert "MODE 'all' (default) tunes every selected test" in page


def test_check_fails_on_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generator = load_generator()
    stale = tmp_path / "options.md"
    stale.write_text(generator.render().replace("--autotune-budget", "--autotune-budgett"), encoding="utf-8")
    monkeypatch.setattr(generator, "PAGE", stale)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0  # rewrites it
    assert generator.main(["--check"]) == 0


def test_the_script_runs_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
