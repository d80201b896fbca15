"""Several trials of one tuning run at once, one per device: the executor protocol and the loop.

* :mod:`~pytest_autotune.tuning.parallel.executor`: :class:`TrialExecutor`, what runs the trials
  (slots, ``submit``, ``wait``, ``restart``), and :class:`LocalExecutor`, its implementation for the
  devices of this host (one thread and one persistent trial worker per slot);
* :mod:`~pytest_autotune.tuning.parallel.loop`: :func:`run_parallel`, the tuning loop that keeps
  every slot busy and tells the tuner each outcome as it finishes.
"""

from __future__ import annotations

from pytest_autotune.tuning.parallel.executor import (
    Finished,
    LocalExecutor,
    ObjectiveRunner,
    SlotRunner,
    TrialExecutor,
)
from pytest_autotune.tuning.parallel.loop import run_parallel

__all__ = ["Finished", "LocalExecutor", "ObjectiveRunner", "SlotRunner", "TrialExecutor", "run_parallel"]
