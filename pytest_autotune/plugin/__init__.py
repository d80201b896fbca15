"""pytest plugin entry point (``pytest11``: ``autotune``): hooks and fixtures, nothing more.

The hooks delegate to modules imported when first needed, so loading the plugin costs a few
milliseconds and a plain ``pytest`` run imports neither numpy (until a tunable test module does)
nor torch, gpytorch, scikit-learn or a device library (until a test uses a device backend).

Fixtures: ``autotune`` (the configuration under test and the timing tools, for ``@tunable``
tests), ``autotune_timer`` (override it to supply times, e.g. from a simulator) and
``_autotune_devices`` (this process's device per backend, for the backends' fixtures). Each
device backend's own fixtures (e.g. ``cl_context`` and ``cl_queue``) live in its folder under
``backends/``; :func:`pytest_configure` registers the modules the backend registry names.
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING

import pytest

from pytest_autotune.plugin.options import add_options, normalise_mode_argument

if TYPE_CHECKING:
    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.controller import Controller
    from pytest_autotune.plugin.devices import DeviceResolver
    from pytest_autotune.plugin.modes.item_plan import ItemPlan
    from pytest_autotune.plugin.modes.run_mode import RunMode
    from pytest_autotune.plugin.report.formats.reporter import Reporter
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.timing.measure import Timer

SESSION: pytest.StashKey[AutotuneSession] = pytest.StashKey()
CONTROLLER: pytest.StashKey[Controller] = pytest.StashKey()
PLAN: pytest.StashKey[ItemPlan] = pytest.StashKey()
#: This process's run mode, chosen once at configure time (:mod:`pytest_autotune.plugin.modes.run_mode`).
MODE: pytest.StashKey[RunMode] = pytest.StashKey()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Add pytest-autotune's hooks (:mod:`pytest_autotune.plugin.hookspec`): other plugins and
    ``conftest.py`` files add report formats through ``pytest_autotune_reporters``."""
    from pytest_autotune.plugin import hookspec

    pluginmanager.add_hookspecs(hookspec)


@pytest.hookimpl(tryfirst=True)
def pytest_autotune_reporters(config: pytest.Config) -> list[Reporter]:
    """The built-in report formats (:mod:`pytest_autotune.plugin.report.formats.registry`), first."""
    from pytest_autotune.plugin.report.formats.registry import built_in_reporters

    return built_in_reporters()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``autotune`` option group and its ini keys."""
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    """Let ``pytest --autotune PATH`` mean tuning PATH (``--autotune`` takes an optional mode)."""
    before = list(args)
    normalise_mode_argument(args)
    if args != before:  # re-parse as pytest did, so the initial conftests of PATH are found
        previous = early_config.known_args_namespace
        reparsed = parser.parse_known_args(args, namespace=copy.copy(early_config.option))
        if reparsed.confcutdir is None:
            reparsed.confcutdir = previous.confcutdir
        early_config.known_args_namespace = reparsed


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and the backends' fixtures; load settings and store (bad values: usage errors)."""
    config.addinivalue_line("markers", "autotune(**policy): a @tunable kernel test (added by @tunable)")
    from pytest_autotune.backends import fixture_modules

    for module in fixture_modules():  # light modules: device libraries load inside the fixtures
        config.pluginmanager.import_plugin(module)
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.policy import PolicyError
    from pytest_autotune.store.document import StoreError
    from pytest_autotune.tuning.validation import validate_policy

    try:
        session = AutotuneSession(config, validate_policy)
    except (PolicyError, StoreError, ValueError) as exc:  # a compare worker told its parent (session.py)
        raise pytest.UsageError(f"pytest-autotune: {exc}") from exc
    config.stash[SESSION] = session
    config.stash[MODE] = _run_mode(session)
    if not session.is_xdist_worker and session.worker_spec is None:
        from pytest_autotune.plugin.controller import Controller

        controller = Controller(session)
        config.stash[CONTROLLER] = controller
        config.pluginmanager.register(controller, "autotune-controller")
        if config.pluginmanager.hasplugin("xdist"):
            from pytest_autotune.plugin.xdist_support import XdistController

            config.pluginmanager.register(XdistController(controller), "autotune-xdist")


def _run_mode(session: AutotuneSession) -> RunMode:
    """This process's run mode, from its worker spec, ``--autotune-compare`` and the settings.

    Built here, in the one module above every mode (:mod:`pytest_autotune.plugin.modes.run_mode`),
    which hands each mode the planner (``planning.plan_item`` bound to the session).
    """
    spec, settings = session.worker_spec, session.settings
    planner = functools.partial(_plan, session)
    if spec is not None and spec.role == "compare":
        from pytest_autotune.plugin.compare.worker import CompareWorkerMode, NotCollectedReporter

        session.config.pluginmanager.register(NotCollectedReporter(spec), "autotune-compare-worker")
        return CompareWorkerMode(spec, planner)
    if spec is not None:
        from pytest_autotune.plugin.workers.main import WorkerMode

        return WorkerMode(spec, planner)
    if session.compare is not None:
        from pytest_autotune.plugin.compare.mode import CompareMode

        return CompareMode(session, planner)
    from pytest_autotune.plugin.modes.execution import CheckMode, TuneMode, UpdateBaselineMode
    from pytest_autotune.plugin.workers.placement import TrialPlacement

    if settings.tuning:
        return TuneMode(session, TrialPlacement(session), planner, missing_only=settings.mode == "missing")
    if settings.update_baseline:
        return UpdateBaselineMode(session, TrialPlacement(session), planner)
    return CheckMode(session, planner)


def _plan(session: AutotuneSession, item: pytest.Item) -> ItemPlan | None:
    """``planning.plan_item``, imported at the first test's setup (not when pytest starts)."""
    from pytest_autotune.plugin.modes.planning import plan_item

    return plan_item(session, item)


def _session(config: pytest.Config) -> AutotuneSession:
    return config.stash[SESSION]


def _is_tunable(item: pytest.Item) -> bool:
    from pytest_autotune.api import get_spec

    return get_spec(getattr(item, "obj", None)) is not None


def _is_relevant(session: AutotuneSession) -> bool:
    return session.store.exists or session.settings.tuning or session.settings.update_baseline


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """Header line on the xdist controller (which collects nothing); see the collection hook otherwise."""
    session = config.stash.get(SESSION, None)
    if session is None or not config.pluginmanager.hasplugin("dsession") or not _is_relevant(session):
        return None
    from pytest_autotune.plugin.report.formats.terminal import header_lines

    return header_lines(session, session.store.devices())


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str] | None:
    """Header line: mode, device keys of the collected tunable tests, cache path and entry count."""
    session = config.stash.get(SESSION, None)
    if session is None or config.get_verbosity() < 0 or config.option.no_header:
        return None
    tunable = [item for item in items if _is_tunable(item)]
    if not tunable and not _is_relevant(session):
        return None
    from pytest_autotune.plugin.report.formats.terminal import header_lines

    try:
        devices = {session.devices.key_for(getattr(item, "fixturenames", ())) for item in tunable}
    except Exception as exc:  # reported again, per test, when the tests set up
        return [f"autotune: cannot select a device: {type(exc).__name__}: {exc}"]
    return header_lines(session, devices)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tunable tests ``autotune`` (before ``-m`` deselects) so ``-m autotune`` selects them.

    A worker the plugin started (any role) keeps only the test it serves.
    """
    spec = _session(config).worker_spec
    if spec is not None:
        others = [item for item in items if item.nodeid != spec.nodeid]
        items[:] = [item for item in items if item.nodeid == spec.nodeid]
        if others:
            config.hook.pytest_deselected(items=others)
    for item in items:
        if _is_tunable(item):
            item.add_marker("autotune")


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Remember deselected tests: they exist (their entries are used) but pruning must not run."""
    session = _session(items[0].config) if items else None
    if session is None:
        return
    session.collection.deselected += len(items)
    for item in items:
        session.collection.add(item.nodeid, tunable=_is_tunable(item))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record what was collected; xdist workers send it to the controller."""
    state = _session(session.config)
    for item in session.items:
        state.collection.add(item.nodeid, tunable=_is_tunable(item))
    state.collection.errors = session.testsfailed
    if state.is_xdist_worker:
        session.config.workeroutput["autotune"] = state.collection.to_dict()  # type: ignore[attr-defined]
    elif CONTROLLER in session.config.stash:
        session.config.stash[CONTROLLER].add_collection(state.collection)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Plan each tunable test before its fixtures are set up (misuse fails the setup).

    A plain implementation: skip/xfail marks (tryfirst) are evaluated before it, and it runs
    before pytest's own setup (registered earlier), which creates the fixtures.
    """
    from pytest_autotune.plugin.modes.planning import DeviceMissing, PlanError

    failure: str | None = None
    missing: str | None = None
    try:
        plan = item.config.stash[MODE].plan(item)
    except DeviceMissing as exc:
        missing = str(exc)
    except PlanError as exc:
        failure = str(exc)
    if missing is not None:
        pytest.skip(missing)
    if failure is not None:
        pytest.fail(failure, pytrace=False)  # outside the except: the message is shown once
    if plan is not None:
        item.stash[PLAN] = plan


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Call a tunable test in this process's run mode (tune, check, compare; serve it in a worker)."""
    plan = pyfuncitem.stash.get(PLAN, None)
    if plan is None:
        return None
    from pytest_autotune.plugin.modes.run_mode import conclude
    from pytest_autotune.warning_types import take_escalated

    take_escalated()  # none of another test's escalated warnings is this test's
    fixture: Autotune = pyfuncitem.funcargs["autotune"]  # type: ignore[assignment]
    outcome = pyfuncitem.config.stash[MODE].run(pyfuncitem, plan, fixture)
    if outcome is not None:  # a worker's parent reports
        conclude(pyfuncitem, outcome)
    return True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the store once (controller or single process), then every report format asked for."""
    controller = session.config.stash.get(CONTROLLER, None)
    if controller is None:
        return
    controller.finish(int(exitstatus))
    if controller.outcome.error is not None and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # results that were not saved fail the run
    from pytest_autotune.plugin.report.formats.reporter import write_reports

    context = controller.report_context(session.config.pluginmanager.get_plugin("terminalreporter"))
    if write_reports(_reporters(session.config), "session-finish", controller.results, context):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a format asked for was not written


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The autotune sections (per device, performance regressions) and other terminal reporters."""
    controller = config.stash.get(CONTROLLER, None)
    if controller is None:
        return
    from pytest_autotune.plugin.report.formats.reporter import write_reports

    context = controller.report_context(terminalreporter)
    write_reports(_reporters(config), "terminal-summary", controller.results, context)


def _reporters(config: pytest.Config) -> list[Reporter]:
    """Every plugin's report formats (``pytest_autotune_reporters``), the built-in ones first."""
    return [reporter for group in config.hook.pytest_autotune_reporters(config=config) for reporter in group]


# -- fixtures ---------------------------------------------------------------------------------------------
@pytest.fixture
def autotune_timer() -> Timer:
    """The timer ``autotune.measure`` uses; override this fixture to supply times (fakes, simulators)."""
    from pytest_autotune.timing.measure import DefaultTimer

    return DefaultTimer()


@pytest.fixture
def autotune_l2_flush() -> bool:
    """Whether a GPU backend's event timer flushes the L2 cache before each timed call (as
    ``triton.testing.do_bench``); override this fixture to return False to time warm caches."""
    return True


@pytest.fixture
def autotune(request: pytest.FixtureRequest, autotune_timer: Timer) -> Autotune:
    """The configuration under test of a ``@tunable`` test, and the tools to time it."""
    from pytest_autotune.fixture import MEASURE_REPEAT, Autotune
    from pytest_autotune.timing.measure import DefaultTimer

    plan = request.node.stash.get(PLAN, None)
    if plan is None:
        pytest.fail(f"{request.node.nodeid}: the autotune fixture is only for @tunable tests", pytrace=False)
    timer = autotune_timer
    backend = _session(request.config).devices.backend_for(request.fixturenames)
    if isinstance(timer, DefaultTimer) and timer.sync is None:
        own = backend.timer(request.fixturenames, request.getfixturevalue)
        sync = (
            None if own is not None else backend.synchronizer(request.fixturenames, request.getfixturevalue)
        )
        if own is not None:
            timer = own
        elif sync is not None:
            timer = DefaultTimer(sync=sync)
    fixture = Autotune(
        nodeid=request.node.nodeid,
        space=plan.space,
        policy=plan.policy,
        device=plan.device,
        timer=timer,
        tuning=plan.tune,
        backend=backend,
        geometry=plan.spec.geometry,
    )
    fixture.begin_run(plan.committed.config, repeat_default=MEASURE_REPEAT)
    return fixture


@pytest.fixture(scope="session")
def _autotune_devices(request: pytest.FixtureRequest) -> DeviceResolver:
    """This process's device of each backend (``devices.device("opencl")``), for backend fixtures."""
    return _session(request.config).devices
