"""Deciding, at setup, what happens to one tunable test: policy, device, configuration, mode.

:func:`plan_item` merges the policy layers (session options < ``@tunable`` keywords <
``@pytest.mark.autotune``, farthest marker first), resolves the device key, looks the test up in the
store, and decides whether to tune it. Every misuse fails the test's setup with a message naming the
test: ``@constraint`` or ``@pytest.mark.autotune`` without ``@tunable``, a tunable test that does not
request the ``autotune`` fixture, bad marker keywords, tuning on a device shared by xdist workers.
So does a damaged store entry (naming its file, device and field) outside tuning; a tuning run
(``--autotune``, ``--autotune=missing``) tunes the test as if it had no entry and replaces it.

When a test that declares its launch geometry is tuned, the device's limits (from its backend)
become known constraints of the space searched (:func:`pytest_autotune.backends.launch_limits.prune_space`):
the plan's :attr:`ItemPlan.space` leaves those configurations out, and :attr:`ItemPlan.pruned`
says how many and why. The declared space, and so the stored ``space_hash``, stay the same.
A test tuned without an up-to-date entry on its device gets the warm start of
:mod:`pytest_autotune.plugin.modes.warm_start` (unless ``--autotune-transfer=off``).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pytest_autotune.api import get_spec, pending_constraints
from pytest_autotune.entry import DamagedEntryError
from pytest_autotune.plugin.modes.check import select_config
from pytest_autotune.plugin.modes.item_plan import ItemPlan
from pytest_autotune.plugin.modes.warm_start import warm_start
from pytest_autotune.policy import Policy, PolicyError, merge_policy
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.timing.clock import Clock, resolve_clock
from pytest_autotune.tuning.spec import KernelKeyError
from pytest_autotune.tuning.validation import (
    check_strategy_options,
    translate_strategy_options,
    validate_policy,
)
from pytest_autotune.warning_types import AutotuneClockWarning

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.backends.launch_limits import Pruned
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.space.base import Space
    from pytest_autotune.tuning.spec import TunableSpec

__all__ = ["DeviceMissing", "ItemPlan", "PlanError", "plan_item"]


class DeviceMissing(Exception):
    """The test's backend has no usable device here: the test is skipped with the reason."""


class PlanError(Exception):
    """A tunable test cannot run as declared; the message names the test and the fix."""


def _marker_layers(item: pytest.Item) -> list[dict[str, Any]]:
    layers = []
    for mark in reversed(list(item.iter_markers("autotune"))):
        if mark.args:
            raise PlanError(f"{item.nodeid}: @pytest.mark.autotune takes keywords only, got {mark.args!r}")
        if mark.kwargs:
            layers.append(validate_policy(mark.kwargs, source=f"@pytest.mark.autotune on {item.nodeid}"))
    return layers


def _shared_device_refusal(nodeid: str, device: str, workers: int) -> str:
    return (
        f"{nodeid}: refusing to tune on {device!r}: {workers} xdist workers share it and their timings "
        "would interfere; use one worker per device (-n with as many workers as devices, or "
        "--autotune-device=A,B,...) or pass --autotune-allow-shared-device"
    )


def _damaged_entry_message(nodeid: str, error: DamagedEntryError) -> str:
    return (
        f"damaged autotune entry: {error}; it is kept as it is until a tuning run replaces it: "
        f"pytest --autotune '{nodeid}' (or correct the value by hand)"
    )


def _checked_strategy(nodeid: str, policy: Policy) -> Policy:
    """``policy`` with its strategy options checked against the strategy the layers chose.

    Options given without a strategy on the same layer (``@tunable(strategy_options={...})`` with
    the strategy from the command line) are checked here, at collection, rather than failing the
    test when it runs; Kernel Tuner's option names are translated for that strategy.
    """
    if not policy.strategy_options:
        return policy
    try:
        options = translate_strategy_options(policy.strategy, policy.strategy_options, nodeid)
        check_strategy_options(policy.strategy, options)
    except PolicyError as exc:
        raise PlanError(str(exc)) from exc
    except (TypeError, ValueError, ImportError) as exc:
        raise PlanError(f"{nodeid}: strategy {policy.strategy!r}: {exc}") from exc
    return replace(policy, strategy_options=options)


def plan_item(session: AutotuneSession, item: pytest.Item) -> ItemPlan | None:
    """The plan of ``item``, or None when it is not a tunable test; raises :class:`PlanError`.

    In a worker the plugin started, the plan is the worker's role's (:meth:`ItemPlan.for_trial_worker`).
    """
    obj = getattr(item, "obj", None)
    spec = get_spec(obj)
    try:
        layers = _marker_layers(item)
    except PolicyError as exc:
        raise PlanError(str(exc)) from exc
    if spec is None:
        if pending_constraints(obj):
            raise PlanError(f"{item.nodeid}: @constraint needs @tunable on the same test")
        if layers:
            raise PlanError(f"{item.nodeid}: @pytest.mark.autotune(...) applies only to @tunable tests")
        return None
    if "autotune" not in getattr(item, "fixturenames", ()):
        raise PlanError(
            f"{item.nodeid}: a @tunable test must request the 'autotune' fixture "
            "(it gives the configuration and measures it)"
        )
    policy = _checked_strategy(
        item.nodeid, merge_policy([session.settings.policy_layer, spec.policy, *layers])
    )
    try:
        spec.key_values(getattr(getattr(item, "callspec", None), "params", {}))
    except KernelKeyError as exc:
        raise PlanError(f"{item.nodeid}: {exc}") from None
    fixturenames = getattr(item, "fixturenames", ())
    missing = session.devices.backend_for(fixturenames).unavailable()
    if missing is not None:
        raise DeviceMissing(f"{item.nodeid}: no device to run on: {missing}")
    try:
        device = session.devices.key_for(fixturenames)
    except Exception as exc:  # device lookup: not found, no driver, pyopencl missing, ...
        raise PlanError(f"{item.nodeid}: cannot select the device: {type(exc).__name__}: {exc}") from exc
    mode = session.settings.mode
    try:
        entry = session.store.entry(device, item.nodeid)
        damaged = None
    except DamagedEntryError as exc:
        if mode not in ("all", "missing"):
            raise PlanError(_damaged_entry_message(item.nodeid, exc)) from None
        entry, damaged = None, exc  # tuning replaces the damaged entry
    try:
        committed = select_config(spec.space, entry, policy)
    except SpaceError as exc:
        raise PlanError(f"{item.nodeid}: no configuration to run: {exc}") from exc
    if damaged is not None:
        committed = replace(committed, state="stale", reason=f"the entry is damaged: {damaged}")
    tune = mode == "all" or (mode == "missing" and committed.state != "committed")
    shared_by = 1 if session.settings.allow_shared_device else session.devices.shared_by(device)
    if tune and shared_by > 1:
        raise PlanError(_shared_device_refusal(item.nodeid, device, shared_by))
    limited, pruned = None, None
    if tune and spec.geometry is not None and session.worker_spec is None:
        limited, pruned = _within_limits(session, f"{item.nodeid}: on {device}", spec, fixturenames)
    warm = None
    if tune and committed.state != "committed" and session.settings.transfer and session.worker_spec is None:
        warm = warm_start(
            session.config.stash,
            session.store,
            session.settings.transfer_from,
            nodeid=item.nodeid,
            device=device,
            space=spec.space,
            maximize=policy.maximize,
        )
    clock = _judging_clock(session, item.nodeid, fixturenames)
    plan = ItemPlan(spec, policy, device, committed, tune, shared_by, limited, pruned, warm, clock)
    worker = session.worker_spec
    return plan if worker is None else plan.for_trial_worker(worker.role)


def _judging_clock(session: AutotuneSession, nodeid: str, fixturenames: Any) -> Clock:
    """The clock the test's regression verdicts judge (``--autotune-clock`` on its device); ``cpu``
    on a device that is not the CPU judges on ``wall`` with a warning naming the test."""
    clock, refused = resolve_clock(session.settings.clock, session.devices.is_cpu_for(fixturenames))
    if refused is not None and session.worker_spec is None:
        warnings.warn(AutotuneClockWarning(f"{nodeid}: {refused}"), stacklevel=2)
    return clock


#: Spaces within device limits already built in this process, by (space, limits): parametrized
#: tests share one declaration. The space is kept in the value so that its id is not reused.
_LIMITED: dict[tuple[int, Any], tuple[Space, Space | None, Pruned | None]] = {}


def _within_limits(
    session: AutotuneSession, where: str, spec: TunableSpec, fixturenames: Any
) -> tuple[Space | None, Pruned | None]:
    """The declared space within the limits of the test's device, and what they pruned."""
    from pytest_autotune.backends.launch_limits import prune_space

    assert spec.geometry is not None
    backend = session.devices.backend_for(fixturenames)
    limits = backend.limits(session.devices.assignment(backend).device)
    key = (id(spec.space), limits)
    if key not in _LIMITED:
        try:
            limited, pruned = prune_space(spec.params, spec.constraints, spec.space, spec.geometry, limits)
        except SpaceError as exc:
            raise PlanError(f"{where}: {exc}") from exc
        _LIMITED[key] = (spec.space, limited if pruned is not None else None, pruned)
    _, limited_space, pruned = _LIMITED[key]
    return limited_space, pruned
