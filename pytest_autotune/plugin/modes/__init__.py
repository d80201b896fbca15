"""The modes of a run and their planning: what each test does in tune, check and baseline runs.

Owns the plan of one test (``planning``, ``item_plan``, ``committed``, ``warm_start``), tune mode
(``tune``), check mode (``check``), the fresh-process baseline (``baseline``) and the dispatch of a
test's call to its mode (``execution``). Compare mode has its own folder, ``compare/``.
"""
