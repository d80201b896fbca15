"""The report formats: each way a run's results are written, one module per format.

Every format is a :class:`~pytest_autotune.plugin.report.formats.reporter.Reporter` (``reporter``:
the interface, what a reporter is given and what it returns): the terminal summary and the header
line (``terminal``), pytest-benchmark's JSON (``benchmark_json``), the Markdown summary
(``markdown``) and the HTML page with its plots (``pictures``). The built-in ones are listed once,
in ``registry``; the plugin gets them, and any project's own, through the hook
``pytest_autotune_reporters`` (:mod:`pytest_autotune.plugin.hookspec`). A new built-in format is
one module here plus one line in the registry; a format whose option names the file it writes adds
that option's row, of kind ``output``, to ``plugin/option_table.py`` (the path is checked at
start-up and reaches the reporter as ``context.settings.outputs[name]``).
"""
