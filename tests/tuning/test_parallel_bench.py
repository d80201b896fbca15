"""``python -m benchmarks parallel`` reads any folder of caches and writes only under ``--out``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import REPLAY_DATA, ROOT
from benchmarks.strategy import parallel

SPACE = "pnpoly__RTX_3090.json.gz"


def test_the_runs_read_datasets_and_land_under_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    datasets, out = tmp_path / "caches", tmp_path / "out"
    datasets.mkdir()
    shutil.copy(REPLAY_DATA / "spaces.json", datasets / "spaces.json")
    shutil.copy(REPLAY_DATA / SPACE, datasets / SPACE)
    read: list[Path] = []

    def simulate(file_name: str, seed: int, devices: int, budget: int) -> dict[str, Any]:
        read.append(parallel._FOLDERS["datasets"])
        optimum = parallel._replay(file_name).optimum  # from --datasets
        trials = [{"value": optimum * 2, "end": 1.0}, {"value": optimum, "end": 2.0 / devices}]
        return {"space": file_name, "seed": seed, "devices": devices, "trials": trials, "asks": []}

    monkeypatch.setattr(parallel, "simulate", simulate)
    before = sorted((ROOT / "benchmarks").rglob("parallel_bench*"))
    argv = ["--datasets", str(datasets), "--out", str(out), "--only", SPACE, "--seeds", "1"]
    parallel.main([*argv, "--budget", "2", "--devices", "1", "2", "--jobs", "1"])
    assert read == [datasets, datasets]
    assert sorted(p.name for p in (out / "parallel_bench").iterdir()) == [
        "pnpoly__RTX_3090-s0-n1-b2.json",
        "pnpoly__RTX_3090-s0-n2-b2.json",
    ]
    assert sorted((ROOT / "benchmarks").rglob("parallel_bench*")) == before  # nothing in the repository
    assert "pnpoly__RTX_3090  2  1.000" in capsys.readouterr().out
