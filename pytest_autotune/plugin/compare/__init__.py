"""Compare mode (``--autotune-compare=REF``): the same test at a git commit against the working tree.

Owns REF's tree (``git_ref``), the run of one compared test (``mode``), the pair of workers and the
ABBA blocks judged by :mod:`pytest_autotune.timing.paired` (``pair``, ``side``), the worker's end of
a side (``worker``) and the terminal section of the verdicts (``report``). Nothing here writes
``autotune.json``.
"""
