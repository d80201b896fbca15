"""The modes of a run and their planning: what each test does in tune, check and baseline runs.

Owns what a run mode is and how a test's call ends (``run_mode``), the plan of one test
(``planning``, ``item_plan``, ``committed``, ``warm_start``), the search of tune mode (``tune``),
the run and verdict of check mode (``check``), the fresh-process baseline (``baseline``), and the
tune, check and update-baseline modes that build a test's result (``execution``). Compare mode has
its own folder, ``compare/``; a worker's mode is beside what it serves (``workers/main.py``,
``compare/worker.py``); where trials run is ``workers/placement.py``.
"""
