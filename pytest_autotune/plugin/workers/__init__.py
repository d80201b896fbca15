"""Running a test's body: in this process or in a worker pytest process, and the talk between them.

Owns calling the body once and naming what happened (``runner``), starting a worker pytest
(``launch``), the parent's side (``parent``) and the worker's side (``main``) of a trial, baseline or
compare worker, and the messages they exchange (``protocol``). A new worker kind is a role in
``protocol`` plus the module that serves it (as ``compare/worker.py`` serves the ``compare`` role).
"""
