"""What a run tells: the result each test carries, and every way it is shown or written.

Owns the result on the test report (``results``), the search trace it carries
(``search_trace``), the terminal summary (``terminal``, ``summary_text``), the
live progress line (``progress``), the Markdown summary (``markdown``) and the pictures
(``pictures``, ``plot``). A new report format is one module here, called from the plugin's
``pytest_sessionfinish``.
"""
