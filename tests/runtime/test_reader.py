"""The run-time reader: which configuration for a kernel, device and problem size, and why."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import runtime
from pytest_autotune.runtime import DeviceId, TunedConfigError, TunedConfigs

H100 = "NVIDIA H100 80GB HBM3 / sm_90"
H200 = "NVIDIA H200 / sm_90"
A100 = "NVIDIA A100-SXM4-80GB / sm_80"
POCL = "Portable Computing Language / pthread-AMD EPYC"


def entry(
    config: dict[str, Any], *, kernel: str | None = "matmul", key: dict[str, Any] | None = None
) -> dict[str, Any]:
    data: dict[str, Any] = {"config": config, "space_hash": "abc"}
    if kernel is not None:
        data["kernel"] = kernel
    if key is not None:
        data["key"] = key
    return data


def write_store(path: Path, devices: dict[str, dict[str, Any]], info: dict[str, Any] | None = None) -> Path:
    doc = {
        "schema_version": 1,
        "devices": {
            d: {"info": (info or {}).get(d, {"key": d}), "tests": tests} for d, tests in devices.items()
        },
    }
    path.write_text(json.dumps(doc))
    return path


def sizes_store(tmp_path: Path) -> TunedConfigs:
    tests = {
        f"t.py::test_mm[{n}]": entry({"BLOCK": block}, key={"M": n, "N": n})
        for n, block in ((256, 32), (1024, 64), (4096, 128))
    }
    return TunedConfigs.read(write_store(tmp_path / "autotune.json", {H100: tests}))


def test_exact_device_and_key(tmp_path: Path) -> None:
    choice = sizes_store(tmp_path).choose("matmul", device=H100, key={"M": 1024, "N": 1024})
    assert dict(choice.config) == {"BLOCK": 64}
    assert (choice.device_match, choice.size_match) == ("exact", "exact")
    assert (choice.entry, choice.device) == ("t.py::test_mm[1024]", H100)


def test_nearest_key_by_log_ratio(tmp_path: Path) -> None:
    tuned = sizes_store(tmp_path)
    # 2048 is one doubling from 1024 and 4096 in each dimension: a tie, broken to the larger key
    assert tuned.choose("matmul", device=H100, key={"M": 2048, "N": 2048}).config["BLOCK"] == 128
    # 1500 is nearer 1024 (log2 ratio 0.55) than 4096 (1.45)
    nearest = tuned.choose("matmul", device=H100, key={"M": 1500, "N": 1500})
    assert (nearest.config["BLOCK"], nearest.size_match) == (64, "nearest")
    assert dict(nearest.key or {}) == {"M": 1024, "N": 1024}
    assert nearest.distance == pytest.approx(2 * math.log2(1500 / 1024))
    assert (
        "the nearest key {'M': 1024, 'N': 1024}, 1.10 doublings from {'M': 1500, 'N': 1500}" in nearest.reason
    )
    exact = tuned.choose("matmul", device=H100, key={"M": 1024, "N": 1024})
    assert (exact.distance, dict(exact.asked or {})) == (0.0, {"M": 1024, "N": 1024})
    # far below every key: the smallest
    assert tuned.choose("matmul", device=H100, key={"M": 8, "N": 8}).config["BLOCK"] == 32


def test_device_fallbacks_architecture_then_vendor_then_default(tmp_path: Path) -> None:
    tuned = sizes_store(tmp_path)
    same_arch = tuned.choose("matmul", device=H200, key={"M": 256, "N": 256})
    assert (same_arch.device_match, same_arch.device, same_arch.config["BLOCK"]) == ("architecture", H100, 32)
    vendor = tuned.choose("matmul", device=A100, key={"M": 256, "N": 256})
    assert vendor.device_match == "vendor"
    other = tuned.choose("matmul", device=POCL, key={"M": 256, "N": 256}, default={"BLOCK": 16})
    assert (other.device_match, other.size_match, dict(other.config)) == ("default", "default", {"BLOCK": 16})
    with pytest.raises(
        TunedConfigError, match=rf"no entry of kernel 'matmul' fits device .*devices with entries: {H100}\)"
    ):
        tuned.choose("matmul", device=POCL, key={"M": 256, "N": 256})


def test_a_kernel_name_the_file_does_not_hold_lists_those_it_does(tmp_path: Path) -> None:
    tuned = sizes_store(tmp_path)
    with pytest.raises(
        TunedConfigError, match=r"no entry of kernel 'matmull' \(kernel names in the file: matmul;"
    ):
        tuned.choose("matmull", device=H100, key={"M": 256, "N": 256})
    fallback = tuned.choose("matmull", device=H100, key={"M": 256, "N": 256}, default={"BLOCK": 8})
    assert (fallback.size_match, dict(fallback.config)) == ("default", {"BLOCK": 8})


def test_exact_device_beats_a_closer_size_elsewhere(tmp_path: Path) -> None:
    path = write_store(
        tmp_path / "autotune.json",
        {
            H100: {"t.py::a[256]": entry({"BLOCK": 32}, key={"M": 256})},
            H200: {"t.py::a[1024]": entry({"BLOCK": 64}, key={"M": 1024})},
        },
    )
    choice = TunedConfigs.read(path).choose("matmul", device=H200, key={"M": 256})
    assert (choice.device, choice.device_match, choice.size_match) == (H200, "exact", "nearest")


def test_opencl_vendor_and_kind_from_the_info_block(tmp_path: Path) -> None:
    info = {POCL: {"vendor": "AuthenticAMD", "type": "CPU"}}
    path = write_store(tmp_path / "autotune.json", {POCL: {"t.py::k": entry({"WPT": 4})}}, info)
    tuned = TunedConfigs.read(path)
    other_cpu = DeviceId("Portable Computing Language / pthread-znver4", vendor="amd", kind="CPU")
    assert tuned.choose("matmul", device=other_cpu).device_match == "vendor"
    amd_gpu = DeviceId("AMD Accelerated Parallel Processing / gfx90a", vendor="amd", kind="GPU")
    assert tuned.choose("matmul", device=amd_gpu, default={"WPT": 1}).device_match == "default"


def test_entries_without_kernel_are_found_by_test_id(tmp_path: Path) -> None:
    path = write_store(
        tmp_path / "autotune.json", {POCL: {"t.py::test_gemm": entry({"WPT": 8}, kernel=None)}}
    )
    choice = TunedConfigs.read(path).choose("t.py::test_gemm", device=POCL)
    assert (dict(choice.config), choice.size_match) == ({"WPT": 8}, "unkeyed")


def test_each_fallback_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tuned = sizes_store(tmp_path)
    with caplog.at_level(logging.INFO, logger="pytest_autotune.runtime"):
        for _ in range(5):
            tuned.choose("matmul", device=H200, key={"M": 1500, "N": 1500})
            tuned.choose("matmul", device=H100, key={"M": 1024, "N": 1024})  # exact: no log
            tuned.choose("matmul", device=POCL, key={"M": 8, "N": 8}, default={"BLOCK": 1})
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert "same architecture" in messages[0]
    assert "nearest key" in messages[0]
    assert "declared default" in messages[1]


def test_load_reads_a_path_once(tmp_path: Path) -> None:
    path = sizes_store(tmp_path).path
    assert runtime.load(path) is runtime.load(str(path))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (None, "no such store file"),
        ("{not json", "not valid JSON"),
        ('{"schema_version": 1, "devices": []}', "'devices' must be an object"),
        ("", "is empty"),
        ('\ufeff{"schema_version": 1, "devices": {}}', "starts with a byte order mark"),
        ('{"schema_version": 1, "devices": {}, "devices": {}}', "the key 'devices' appears twice"),
        ('{"schema_version": 99, "devices": {}}', "written by a newer pytest-autotune"),
    ],
)
def test_missing_or_damaged_file_names_it(tmp_path: Path, text: str | None, match: str) -> None:
    path = tmp_path / "autotune.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(TunedConfigError, match=match) as info:
        runtime.load(path)
    assert str(info.value).startswith(f"{path}: ")
    if text is not None:
        assert path.read_text(encoding="utf-8") == text  # nothing written


def test_a_directory_in_place_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "autotune.json").mkdir()
    with pytest.raises(TunedConfigError, match="is a directory, not a regular file"):
        runtime.load(tmp_path / "autotune.json")


def test_damaged_entry_of_the_kernel_names_the_entry(tmp_path: Path) -> None:
    bad = entry({"BLOCK": 32}, key={"M": 256})
    bad["baseline"] = {"median": -1}
    path = write_store(tmp_path / "autotune.json", {H100: {"t.py::mm[256]": bad}})
    with pytest.raises(TunedConfigError, match=r"entry 't.py::mm\[256\]' of device .*baseline.median"):
        TunedConfigs.read(path).choose("matmul", device=H100, key={"M": 256})


def test_an_entry_of_another_kernel_under_the_same_name(tmp_path: Path) -> None:
    path = write_store(
        tmp_path / "autotune.json",
        {
            H100: {
                "t.py::a[1]": entry({"BLOCK": 32}, key={"M": 1}),
                "t.py::b[2]": entry({"TILE": 8}, key={"M": 2}),
            }
        },
    )
    with pytest.raises(TunedConfigError, match=r"entry 't.py::b\[2\]'.*another kernel") as info:
        TunedConfigs.read(path).choose("matmul", device=H100, key={"M": 1})
    assert str(info.value).startswith(f"{path}: ")


def test_a_key_of_the_wrong_kind(tmp_path: Path) -> None:
    tuned = sizes_store(tmp_path)
    with pytest.raises(TunedConfigError, match=r"key 'M' is '1024' \(a string\).*hold a number") as info:
        tuned.choose("matmul", device=H100, key={"M": "1024", "N": 1024})
    assert str(info.value).startswith(f"{tuned.path}: kernel 'matmul': ")
    with pytest.raises(TunedConfigError, match=r"keyed by \['M', 'N'\]"):
        tuned.choose("matmul", device=H100, key={"M": 1024})
    path = write_store(
        tmp_path / "other.json",
        {H100: {"t.py::a[1]": entry({"B": 1}, key={"M": 1}), "t.py::a[x]": entry({"B": 2}, key={"M": "x"})}},
    )
    with pytest.raises(TunedConfigError, match=r"entry 't.py::a\[x\]'.*key 'M' is a string"):
        TunedConfigs.read(path).choose("matmul", device=H100, key={"M": 1})


def test_a_configuration_outside_the_declared_space(tmp_path: Path) -> None:
    tuned = sizes_store(tmp_path)
    allowed = {"BLOCK": [32, 64]}
    assert (
        tuned.choose("matmul", device=H100, key={"M": 1024, "N": 1024}, space=allowed).config["BLOCK"] == 64
    )
    with pytest.raises(TunedConfigError, match=r"test_mm\[4096\].*no longer fits the declared space") as info:
        tuned.choose("matmul", device=H100, key={"M": 4096, "N": 4096}, space=allowed)
    assert str(info.value).startswith(f"{tuned.path}: entry 't.py::test_mm[4096]' of device '{H100}'")
    with pytest.raises(
        TunedConfigError, match=r"parameters \['BLOCK'\], the declared space \['BLOCK', 'W'\]"
    ):
        tuned.choose("matmul", device=H100, key={"M": 256, "N": 256}, space={"BLOCK": [32], "W": [1]})


def test_a_configuration_checked_against_a_space_object(tmp_path: Path) -> None:
    from pytest_autotune import Set, build_space

    tuned = sizes_store(tmp_path)
    space = build_space({"BLOCK": Set(32, 64, 128)}, ["BLOCK >= 64"])
    assert tuned.choose("matmul", device=H100, key={"M": 1024, "N": 1024}, space=space).config["BLOCK"] == 64
    with pytest.raises(TunedConfigError, match="no longer fits"):
        tuned.choose("matmul", device=H100, key={"M": 256, "N": 256}, space=space)


def test_two_entries_for_one_device_and_key(tmp_path: Path) -> None:
    path = write_store(
        tmp_path / "autotune.json",
        {
            H100: {
                "t.py::a[f32]": entry({"B": 1}, key={"M": 1}),
                "t.py::a[f16]": entry({"B": 2}, key={"M": 1}),
            }
        },
    )
    with pytest.raises(TunedConfigError, match="two entries for one device and key"):
        TunedConfigs.read(path).choose("matmul", device=H100, key={"M": 1})


def test_importing_the_reader_brings_no_pytest_torch_numpy() -> None:
    code = (
        "import sys, pytest_autotune.runtime as r; heavy = {'pytest', 'torch', 'numpy', 'triton', 'pyopencl'}"
        " & set(sys.modules); assert not heavy, heavy; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
