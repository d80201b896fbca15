"""Replay of Kernel Tuner cache files built in the test (plain and gzipped), and its errors; one of the
repository's replay datasets (``benchmarks/data/replay``) against its description."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import REPLAY_DATA
from pytest_autotune.outcome import Outcome
from pytest_autotune.replay import Replay, ReplayError
from pytest_autotune.tuning.tuner import Tuner

TUNE_PARAMS = {"block": [32, 64, 128], "tile": [1, 2, 4], "mode": ["fast", "safe"]}
RESTRICTIONS = ["block * tile <= 256"]


def valid_configs() -> list[dict[str, Any]]:
    return [
        {"block": b, "tile": t, "mode": m}
        for b in TUNE_PARAMS["block"]
        for t in TUNE_PARAMS["tile"]
        for m in TUNE_PARAMS["mode"]
        if b * t <= 256
    ]


def recorded_time(config: dict[str, Any]) -> float | str:
    if config["block"] == 128 and config["tile"] == 2:
        return "CompilationFailedConfig"
    if config["block"] == 32 and config["mode"] == "safe" and config["tile"] == 4:
        return "RuntimeFailedConfig"
    if config["block"] == 64 and config["tile"] == 1 and config["mode"] == "safe":
        return "InvalidConfig"
    return 10.0 / config["tile"] + config["block"] / 64 + (config["mode"] == "safe")


def cache_document(configs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entries = {}
    for config in valid_configs() if configs is None else configs:
        key = ",".join(str(config[k]) for k in TUNE_PARAMS)
        value = recorded_time(config)
        entry: dict[str, Any] = {**config, "time": value}
        if not isinstance(value, str):
            entry["times"] = [value * 0.9, value, value * 1.1]
        entries[key] = entry
    return {
        "device_name": "Test GPU",
        "kernel_name": "k",
        "problem_size": [1024],
        "tune_params_keys": list(TUNE_PARAMS),
        "tune_params": TUNE_PARAMS,
        "objective": "time",
        "cache": entries,
    }


@pytest.fixture(params=["json", "json.gz"])
def cache_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    text = json.dumps(cache_document())
    path = tmp_path / f"test.{request.param}"
    if request.param == "json.gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_replay_serves_recorded_outcomes(cache_file: Path) -> None:
    replay = Replay.from_cache(cache_file, tune_params=TUNE_PARAMS, restrictions=RESTRICTIONS)
    assert replay.space.size == len(valid_configs()) == 16
    assert replay.objective({"block": 32, "tile": 4, "mode": "fast"}) == Outcome.ok(10.0 / 4 + 0.5)
    assert replay.objective({"block": 128, "tile": 2, "mode": "fast"}).label == "compile"
    assert replay.objective({"block": 32, "tile": 4, "mode": "safe"}).label == "runtime"
    assert replay.objective({"block": 64, "tile": 1, "mode": "safe"}).label == "constraints"
    assert replay.failure_counts == {
        "ok": 12,
        "correctness": 0,
        "compile": 2,
        "runtime": 1,
        "timeout": 0,
        "constraints": 1,
    }
    feasible = [t for t in map(recorded_time, valid_configs()) if not isinstance(t, str)]
    assert replay.optimum == min(feasible)
    assert replay.optimum_config == {"block": 32, "tile": 4, "mode": "fast"}
    result = Tuner(replay.space, "exhaustive", abort=100, seed=0).run(replay.objective)
    assert result.best_value == replay.optimum
    assert result.counts == replay.failure_counts


def test_without_restrictions_the_space_is_the_cache(cache_file: Path) -> None:
    replay = Replay.from_cache(cache_file)
    assert replay.space.size == 16
    assert not replay.space.contains([{"block": 128, "tile": 4, "mode": "fast"}])[0]


def test_noise_resamples_recorded_repetitions(cache_file: Path) -> None:
    config = {"block": 64, "tile": 2, "mode": "fast"}
    base = recorded_time(config)
    assert isinstance(base, float)
    noisy = Replay.from_cache(
        cache_file, tune_params=TUNE_PARAMS, restrictions=RESTRICTIONS, noise=True, seed=1
    )
    values = {noisy.objective(config).value for _ in range(40)}
    assert values == {base * 0.9, base, base * 1.1}

    def sequence() -> list[float | None]:
        replay = Replay.from_cache(
            cache_file, tune_params=TUNE_PARAMS, restrictions=RESTRICTIONS, noise=True, seed=1
        )
        return [replay.objective(config).value for _ in range(8)]

    assert sequence() == sequence()
    assert noisy.objective({"block": 128, "tile": 2, "mode": "fast"}).label == "compile"


def test_an_unclosed_cache_is_read(tmp_path: Path) -> None:
    text = json.dumps(cache_document())
    path = tmp_path / "open.json"
    path.write_text(text[: -len("}}")] + ",")  # Kernel Tuner's open-cache layout
    assert Replay.from_cache(path, tune_params=TUNE_PARAMS, restrictions=RESTRICTIONS).space.size == 16


def test_loading_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match=r"missing\.json: cache file not found"):
        Replay.from_cache(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": []}')
    with pytest.raises(ReplayError, match=r"bad\.json: not a Kernel Tuner cache file \(no 'cache' object\)"):
        Replay.from_cache(bad)
    bad.write_text("not json at all")
    with pytest.raises(ReplayError, match="not a Kernel Tuner cache file"):
        Replay.from_cache(bad)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(cache_document(valid_configs()[:-1])))
    missing = valid_configs()[-1]
    with pytest.raises(
        ReplayError, match=rf"the space has 16 configurations but the cache only 15; e.g. {missing!r}"
    ):
        Replay.from_cache(partial, tune_params=TUNE_PARAMS, restrictions=RESTRICTIONS)
    with pytest.raises(ReplayError, match=r"tune_params .* do not match"):
        Replay.from_cache(partial, tune_params={"block": [32]}, restrictions=[])
    replay = Replay.from_cache(partial)
    with pytest.raises(ReplayError, match=r"configuration \{'block': 1, .* is absent from the cache"):
        replay.objective({"block": 1, "tile": 1, "mode": "fast"})


def test_from_spaces_json(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text(json.dumps(cache_document()))
    listing = [{"file": "k.json", "tune_params": TUNE_PARAMS, "restrictions": RESTRICTIONS}]
    (tmp_path / "spaces.json").write_text(json.dumps(listing))
    replay = Replay.from_spaces_json(tmp_path / "spaces.json", "k.json")
    assert replay.space.size == 16
    with pytest.raises(ReplayError, match=r"no space 'other\.json'; known: k\.json"):
        Replay.from_spaces_json(tmp_path / "spaces.json", "other.json")


def test_a_real_dataset_matches_its_description() -> None:
    spaces_json = REPLAY_DATA / "spaces.json"  # the replay datasets of the repository
    listing = json.loads(spaces_json.read_text())
    item = next(i for i in listing if i["file"] == "pnpoly__RTX_3090.json.gz")
    replay = Replay.from_spaces_json(spaces_json, item["file"])
    assert replay.space.size == item["constrained_size"]
    assert replay.optimum == item["optimum"]
    assert replay.failure_counts["runtime"] == item["invalid"]["RuntimeFailedConfig"]
