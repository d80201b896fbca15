"""What a run tells: the result each test carries, and what the report formats draw on.

Owns the result on the test report (``results``), the search trace it carries
(``search_trace``), the summary's table and texts (``summary_table``,
``summary_text``), the live progress line (``progress``), the plots (``plot``, ``params``) and the
report folder's guard (``target``). The formats that write them (terminal summary, JSON, Markdown,
HTML) are in ``formats/``, one module each behind one interface; a new format is one module there
plus one line in ``formats/registry.py``.
"""
