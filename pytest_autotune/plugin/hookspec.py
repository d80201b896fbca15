"""The hooks pytest-autotune adds to pytest, for other plugins and ``conftest.py`` files to implement.

Registered by the plugin's ``pytest_addhooks`` (``config.pluginmanager.add_hookspecs``), the way
pytest-benchmark adds ``pytest_benchmark_generate_json``. Kept in its own module, with nothing but
the specifications, so that pluggy reads exactly these names and signatures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_autotune.plugin.report.formats.reporter import Reporter

__all__ = ["pytest_autotune_reporters"]


@pytest.hookspec()
def pytest_autotune_reporters(config: pytest.Config) -> list[Reporter]:
    """Return the report formats this plugin or ``conftest.py`` adds to the run.

    Every implementation is called (not ``firstresult``) and its reporters are used in turn: the
    built-in ones first, then those of the other implementations. Each is a
    :class:`~pytest_autotune.plugin.report.formats.reporter.Reporter`; those ``enabled`` for the
    run write, in the process that reports, once the store is written. The hook is called at each
    stage a reporter may write at (the end of the session, then the terminal summary). Reporter names
    must be unique: each one's outcome is kept by name. Where a project may also run without
    pytest-autotune, mark the implementation ``@pytest.hookimpl(optionalhook=True)``: pytest refuses
    an implementation of a hook nobody added.

    .. code-block:: python

        # conftest.py
        from pytest_autotune.plugin.report.formats.reporter import ReportOutcome, Reporter

        class CsvReporter(Reporter):
            name = "csv"

            def enabled(self, context):
                return True

            def write(self, results, context):
                path = context.rootpath / "autotune.csv"
                path.write_text("".join(f"{r.nodeid},{r.config}\\n" for r in results))
                return ReportOutcome(written=path)

        def pytest_autotune_reporters(config):
            return [CsvReporter()]
    """
    raise NotImplementedError  # a specification: pluggy calls the implementations
