"""Where a tuned test's trials and its baseline run: this process, a worker, one per device, a cluster.

One :class:`TrialPlacement` per session answers both questions for every test, from the test's
policy (``--autotune-isolate``) and the session's options:

* :meth:`TrialPlacement.trials`: the search's trials run in this process
  (:class:`~pytest_autotune.plugin.workers.runner.InProcessTrials`) when trials are not isolated;
  else in the test's trial worker (:class:`~pytest_autotune.plugin.workers.parent.IsolatedTrials`),
  one worker per device of its type under ``--autotune-parallel``
  (:class:`~pytest_autotune.plugin.workers.parallel.ParallelTrials`), or on the devices of a Dask
  cluster under ``--autotune-cluster`` (:class:`~pytest_autotune.plugin.workers.remote.ClusterTrials`,
  over the run's one :class:`~pytest_autotune.plugin.workers.remote.ClusterLink`). Asking for more
  devices than exist, or for devices with trials that are not isolated, is warned about once per
  session.
* :meth:`TrialPlacement.baseline`: fresh baseline worker processes when trials are isolated, else
  this process (:mod:`pytest_autotune.plugin.modes.baseline`).

The modes never import this module: the hooks build the placement and hand it to the modes that
tune or re-measure baselines (:mod:`pytest_autotune.plugin.modes.execution`), which name what they
need of it in a protocol of their own. So the choice of where trials run sits here, in the workers'
folder, beside the runners it chooses between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_autotune.fixture import TRIAL_REPEAT
from pytest_autotune.plugin.modes.baseline import BaselineMeter, FreshProcessBaseline, InProcessBaseline
from pytest_autotune.plugin.workers.parent import IsolatedTrials, worker_environment
from pytest_autotune.plugin.workers.runner import InProcessTrials, TrialRunner
from pytest_autotune.warning_types import AutotuneWarning, warn

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.item_plan import ItemPlan
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.plugin.workers.parallel import ParallelTrials
    from pytest_autotune.plugin.workers.remote import ClusterLink, ClusterTrials
    from pytest_autotune.plugin.workers.runner import BodyRun
    from pytest_autotune.tuning.parallel.executor import TrialExecutor

    TrialWorkers = IsolatedTrials | ParallelTrials | ClusterTrials

__all__ = ["PlacedTrials", "TrialPlacement"]

#: The warnings this session gave once (``--autotune-parallel`` asking for more devices than exist).
_WARNED: Final = pytest.StashKey[set[str]]()
#: The run's one connection to the scheduler of ``--autotune-cluster`` (made on first use).
_CLUSTER: Final = pytest.StashKey["ClusterLink"]()


class PlacedTrials:
    """Where one test's search trials run: worker processes (``workers``) or this process.

    Use it as a context manager around the search: entering starts a single trial worker at once
    (it sets the test up while the tuner is built: the first trial waits for it), leaving stops
    the workers.
    """

    def __init__(self, workers: TrialWorkers | None, here: InProcessTrials) -> None:
        self.workers = workers
        self._here = here

    @property
    def runner(self) -> TrialRunner:
        """What runs one trial: the workers, else this process."""
        return self.workers if self.workers is not None else self._here

    @property
    def executor(self) -> TrialExecutor[BodyRun] | None:
        """The executor of a search over several devices (parallel or cluster), else None."""
        return getattr(self.workers, "executor", None)

    def isolation(self, journal: Path) -> dict[str, Any] | None:
        """The workers' summary and where the trials' details are (None when trials were not isolated)."""
        if self.workers is None:
            return None
        done = journal.with_name(journal.stem + ".done" + journal.suffix)
        return {**self.workers.summary(), "journal": str(done if done.exists() else journal)}

    def __enter__(self) -> PlacedTrials:
        if isinstance(self.workers, IsolatedTrials):
            self.workers.launch()
        if self.workers is not None:
            self.workers.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.workers is not None:
            self.workers.__exit__(*exc)


class TrialPlacement:
    """Where this session's tuned tests run their trials and measure their baselines (module docstring)."""

    def __init__(self, session: AutotuneSession) -> None:
        self.session = session

    def trials(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> PlacedTrials:
        """Where the search of ``item`` runs its trials (warning once when an option cannot apply)."""
        settings = self.session.settings
        workers: TrialWorkers | None = None
        if plan.policy.isolated:
            workers = self._workers(item, plan)
        elif settings.parallel != 1:
            self._warn_once(
                f"--autotune-parallel={settings.parallel} needs isolated trials (a worker "
                "process per device); with --autotune-isolate=none the trials run one at a time",
            )
        elif settings.cluster is not None:
            self._warn_once(
                f"--autotune-cluster={settings.cluster} needs isolated trials (a worker "
                "process on each Dask worker); with --autotune-isolate=none the trials run here, "
                "one at a time",
            )
        return PlacedTrials(workers, InProcessTrials(item, autotune))

    def baseline(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> BaselineMeter:
        """Fresh baseline processes when trials are isolated; else this process (the former way)."""
        if not plan.policy.isolated:
            return InProcessBaseline(item, autotune, plan.policy.maximize)
        return FreshProcessBaseline(
            lambda: IsolatedTrials(item, plan.policy, self._environment(plan), role="baseline"),
            autotune.timer,
            plan.policy.maximize,
            rule=plan.policy.rule,
        )

    def _environment(self, plan: ItemPlan) -> dict[str, str]:
        session = self.session
        return worker_environment(session.settings.cache_path, session.devices.spec_for(plan.device))

    def _workers(self, item: pytest.Function, plan: ItemPlan) -> TrialWorkers:
        """The test's trial worker, or one per device of its type under ``--autotune-parallel``, or the
        devices of a Dask cluster under ``--autotune-cluster``."""
        session = self.session
        if session.settings.cluster is not None:  # the search on a Dask cluster's devices
            from pytest_autotune.plugin.workers.remote import ClusterTrials

            env = self._environment(plan)
            return ClusterTrials(item, plan.policy, env, self._cluster_link(), repeat=TRIAL_REPEAT)
        wanted = session.settings.parallel
        if wanted == 1:
            return IsolatedTrials(item, plan.policy, self._environment(plan))
        from pytest_autotune.plugin.workers.parallel import ParallelTrials, same_type_specs

        specs = same_type_specs(session.devices, session.devices.backend_for(item.fixturenames))
        if None in specs:  # the backend cannot name a device to another process (the host): one device
            specs = specs[:1]
        chosen = specs if wanted == "all" else specs[: int(wanted)]
        if wanted != "all" and len(chosen) < int(wanted):
            self._warn_once(
                f"--autotune-parallel={wanted}: this host has {len(chosen)} usable device(s) of type "
                f"{plan.device}; the trials of its tests run on {len(chosen)} at once",
            )
        if len(chosen) == 1:
            return IsolatedTrials(item, plan.policy, self._environment(plan))
        cache = session.settings.cache_path
        envs = [worker_environment(cache, spec) for spec in chosen]
        return ParallelTrials(item, plan.policy, envs, repeat=TRIAL_REPEAT)

    def _cluster_link(self) -> ClusterLink:
        """The run's one connection to the ``--autotune-cluster`` scheduler (closed when pytest ends)."""
        from pytest_autotune.plugin.workers.remote import ClusterLink

        config, cluster = self.session.config, self.session.settings.cluster
        link = config.stash.get(_CLUSTER, None)
        if link is None:
            assert cluster is not None
            link = config.stash[_CLUSTER] = ClusterLink(cluster)
            config.add_cleanup(link.close)
        return link

    def _warn_once(self, message: str) -> None:
        """Warn with ``message`` once per session."""
        warned = self.session.config.stash.setdefault(_WARNED, set())
        if message not in warned:
            warned.add(message)
            warn(AutotuneWarning(message), stacklevel=3)
