"""The package imports lazily and exposes the parameter kinds."""

import subprocess
import sys


def test_package_import_is_lazy() -> None:
    code = "import sys, pytest_autotune; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_parameter_kinds_are_exported() -> None:
    import pytest_autotune

    assert pytest_autotune.Interval(1, 4).size == 4
