"""Running a test's body: in this process or in a worker pytest process, and the talk between them.

Owns calling the body once and naming what happened (``runner``), where a tuned test's trials and
baseline run (``placement``: this process, a worker, one per device with ``parallel``, a Dask
cluster with ``remote``), starting a worker pytest (``launch``), the parent's side (``parent``) and
the worker's side and run mode (``main``) of a trial or baseline worker, and the worker spec and the
trial messages (``protocol``). A new worker kind is a role in ``protocol`` plus the module that
serves it (as ``compare/worker.py`` serves the ``compare`` role, with ``compare/messages.py``), and
its run mode chosen in the hooks (``plugin/__init__.py``).
"""
