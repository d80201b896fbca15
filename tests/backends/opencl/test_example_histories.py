"""The example kernels' shipped histories: a valid, canonical store that only warm-starts.

``example_kernels/autotune.json`` is what README's command 1 warm-starts from on a new machine
(``pyproject.toml`` names it in ``autotune_transfer_from``). Importing the example tests needs
pyopencl, not a device.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

from benchmarks.kernels.bench import load_case
from benchmarks.kernels.cases import CASES, case_by_name
from benchmarks.transfer.example_histories import history_entry
from pytest_autotune.entry import History
from pytest_autotune.plugin.modes.warm_start import history_source
from pytest_autotune.store.document import dumps, entry_text, read_document
from pytest_autotune.store.history_record import MAX_ENTRY_BYTES
from pytest_autotune.store.reading import Store
from pytest_autotune.tuning.warm_start import overlap, source_design

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "example_kernels" / "autotune.json"


def test_the_main_job_reads_the_shipped_histories() -> None:
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["autotune_transfer_from"] == "example_kernels/autotune.json"
    assert dumps(read_document(SHIPPED)) == SHIPPED.read_text()  # canonical: rewriting changes nothing


def test_every_example_kernel_has_histories_of_other_machines_that_fit_its_space() -> None:
    store = Store.load(SHIPPED)
    assert store.damaged() == []
    for case in CASES:
        nodeid = f"example_kernels/test_{case.name}.py::test_{case.name}"
        devices = [d for d in store.devices() if nodeid in store.tests(d)]
        assert len(devices) >= 2, case.name
        sources = []
        for device in devices:
            machine, _, key = device.partition(": ")
            assert machine.startswith("pocl-")
            assert key == store.device_info(device)["key"] != device  # never a real device's key
            entry = store.entry(device, nodeid)
            assert entry is not None
            assert isinstance(entry.history, History)
            assert len(entry_text(entry.to_json()).encode()) <= MAX_ENTRY_BYTES
            source = history_source(device, "device", entry)
            assert overlap(case.full_space(), source) == len(
                source.trials
            )  # every row is a valid configuration
            sources.append(source)
        assert len(source_design(case.full_space(), sources)) >= 2


def test_the_generator_writes_what_a_tuning_run_would() -> None:
    data = load_case(case_by_name("saxpy"), "pocl-zen4", "trials")
    assert not isinstance(data, str)
    entry = history_entry(data, seed=1, budget=6)
    assert isinstance(entry.history, History)
    assert entry.tuning is not None
    assert entry.tuning.trials == 6
    assert len(entry.history.trials) == entry.tuning.counts["ok"]
    assert entry.history.trials[0][0] == 1.0
    assert entry.baseline is not None
    assert entry.history.best == entry.baseline.median
    assert entry.history.config(entry.history.trials[0][1]) == dict(entry.config)
    assert entry.space_hash == data.case.full_space().space_hash
    assert data.default_ms is not None
    assert entry.history.default == pytest.approx(data.default_ms / (entry.baseline.median * 1e3), rel=1e-3)
