"""Compare mode (``--autotune-compare=REF``): the same test at a git commit against the working tree.

Owns REF's tree (``git_ref``), the run mode and the run of one compared test (``mode``), the pair of
workers and the ABBA blocks judged by :mod:`pytest_autotune.timing.paired` (``pair``, ``side``), what
a comparison comes to, its result built once (``verdict``), the worker's end of a side and its run
mode (``worker``), the messages between the two ends (``messages``) and the terminal section of the
verdicts (``report``). Nothing here writes ``autotune.json``.
"""
