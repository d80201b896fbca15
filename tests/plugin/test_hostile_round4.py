"""The fourth round of hostile inputs (issue 44): output paths, cluster addresses, warnings as
errors, a large store, and the plugin's messages about them.

Each input here once hung the run, crashed it with a traceback through the plugin, or passed in
silence; each must now be one clear message naming the option, file or entry at fault.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.conftest import TWO_TESTS
from tests.test_input_file import fifo, returns_quickly


# -- 1: an output path that is a FIFO or a device ---------------------------------------------------
@pytest.mark.parametrize("option", ["--autotune-json", "--autotune-report-md"])
@pytest.mark.parametrize("target", ["fifo", "/dev/null"])
def test_an_output_path_that_is_no_regular_file_is_a_usage_error_at_start(
    project: pytest.Pytester, option: str, target: str
) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    fifo(project.path / "fifo")
    result = project.runpytest_subprocess(f"{option}={target}", timeout=60)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    shown = project.path / "fifo" if target == "fifo" else target
    kind = "a FIFO (named pipe)" if target == "fifo" else "a character device"
    assert f"{option}: {shown} is {kind}, not a regular file" in text
    assert "INTERNALERROR" not in text


def test_writing_an_output_never_blocks_on_a_fifo_swapped_in_after_the_check(tmp_path: Path) -> None:
    from pytest_autotune.input_file import open_output

    def write() -> None:
        with open_output(fifo(tmp_path / "out.md"), append=True) as handle:
            handle.write("x")

    error = returns_quickly(write)
    assert isinstance(error, OSError)
