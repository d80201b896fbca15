"""``python -m pytest_autotune export``: a C header per device and a minimal store; errors name the entry."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import runtime
from pytest_autotune.commands import main

H100 = "NVIDIA H100 80GB HBM3 / sm_90"
POCL = "Portable Computing Language / pthread-AMD EPYC"


def entry(
    config: dict[str, Any], key: dict[str, Any] | None = None, kernel: str | None = "gemm"
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "config": config,
        "space_hash": "h",
        "baseline": {"median": 1e-4},
        "tuning": {"trials": 3, "counts": {"ok": 3}, "strategy": "bo", "seed": 1, "duration": 1.0},
    }
    if kernel is not None:
        data["kernel"] = kernel
    if key is not None:
        data["key"] = key
    return data


@pytest.fixture
def store(tmp_path: Path) -> Path:
    doc = {
        "schema_version": 1,
        "devices": {
            H100: {
                "info": {"key": H100},
                "tests": {
                    "t.py::test_gemm[256]": entry(
                        {"BLOCK": 32, "ORDER": ["k", "i"], "FAST": True}, {"M": 256}
                    ),
                    "t.py::test_gemm[4096]": entry(
                        {"BLOCK": 128, "ORDER": ["i", "k"], "FAST": False}, {"M": 4096}
                    ),
                    "t.py::test_other": entry({"X": 1}, kernel="other"),
                },
            },
            POCL: {
                "info": {"key": POCL, "vendor": "AuthenticAMD", "type": "CPU"},
                "tests": {
                    "t.py::test_gemm[256]": entry(
                        {"BLOCK": 8, "ORDER": ["i", "k"], "FAST": False}, {"M": 256}
                    )
                },
            },
        },
    }
    path = tmp_path / "autotune.json"
    path.write_text(json.dumps(doc))
    return path


def run(*argv: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", *argv], capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout, done.stderr


def test_header_has_one_block_per_device_with_the_nearest_key(store: Path) -> None:
    code, out, err = run(
        "export", "--file", str(store), "--kernel", "gemm", "--format", "header", "--key", "M=3000"
    )
    assert code == 0, err
    assert "#if defined(AUTOTUNE_DEVICE_NVIDIA_H100_80GB_HBM3_SM_90)" in out
    h100 = out[out.index("AUTOTUNE_DEVICE_NVIDIA_H100_80GB_HBM3_SM_90)") : out.index("#elif")]
    assert "entry 't.py::test_gemm[4096]', key {'M': 4096}" in h100
    for line in (
        "#define GEMM_TUNED",
        "#define BLOCK 128",
        "#define ORDER_0 i",
        "#define ORDER_LEN 2",
        "#define FAST 0",
    ):
        assert line.replace("GEMM_TUNED", "AUTOTUNE_GEMM_TUNED 1") in h100
    assert "#elif defined(AUTOTUNE_DEVICE_PORTABLE_COMPUTING_LANGUAGE_PTHREAD_AMD_EPYC)" in out
    assert out.split("#else\n")[1].startswith("#define AUTOTUNE_GEMM_TUNED 0\n#endif")


def test_header_compiles_and_selects_the_device_block(store: Path, tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    header = tmp_path / "gemm_tuned.h"
    assert main(["export", "--file", str(store), "--kernel", "gemm", "--format", "header", "--key", "M=256",
                 "--fallback", POCL, "-o", str(header)]) == 0  # fmt: skip
    program = tmp_path / "p.c"
    body = 'int main(void) { printf("%d %d\\n", AUTOTUNE_GEMM_TUNED, BLOCK); return 0; }\n'
    program.write_text('#include "gemm_tuned.h"\n#include <stdio.h>\n' + body)
    for flags, expected in ((["-DAUTOTUNE_DEVICE_NVIDIA_H100_80GB_HBM3_SM_90"], "1 32"), ([], "0 8")):
        subprocess.run(
            [compiler, *flags, "-I", str(tmp_path), str(program), "-o", str(tmp_path / "p")], check=True
        )
        assert (
            subprocess.run([str(tmp_path / "p")], capture_output=True, text=True, check=True).stdout.strip()
            == expected
        )


def test_json_holds_only_the_kernels_entries_and_reads_back(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "ship.json"
    assert main(["export", "--file", str(store), "--kernel", "gemm", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    tests = data["devices"][H100]["tests"]
    assert sorted(tests) == ["t.py::test_gemm[256]", "t.py::test_gemm[4096]"]
    assert set(tests["t.py::test_gemm[256]"]) == {"config", "space_hash", "kernel", "key"}
    assert data["devices"][POCL]["info"]["vendor"] == "AuthenticAMD"
    shipped = runtime.load(out).choose("gemm", device=H100, key={"M": 4096})
    assert dict(shipped.config) == {"BLOCK": 128, "ORDER": ("i", "k"), "FAST": False}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kernel", "nope"], "no entry of kernel 'nope' (kernel names in the file: gemm, other"),
        (["--kernel", "gemm", "--format", "header"], "tuned per problem size; give --key M=VALUE"),
        (["--kernel", "gemm", "--format", "header", "--key", "M"], "--key 'M': write NAME=VALUE"),
        (
            ["--kernel", "gemm", "--format", "header", "--key", "M=1", "--fallback", "x"],
            "--fallback 'x': no entry",
        ),
        (["--kernel", "gemm", "--kernel", "other", "--format", "header"], "writes one kernel"),
        (["--kernel", "gemm", "--key", "M=1"], "--key and --fallback are for --format header"),
    ],
)
def test_bad_requests_name_what_is_wrong(store: Path, argv: list[str], message: str) -> None:
    code, out, err = run("export", "--file", str(store), *argv)
    assert (code, out) == (1, "")
    assert message in err


def test_a_damaged_entry_of_the_kernel_is_named_and_nothing_written(store: Path, tmp_path: Path) -> None:
    data = json.loads(store.read_text())
    data["devices"][H100]["tests"]["t.py::test_gemm[256]"]["key"] = {"M": [1, {"x": 2}]}
    store.write_text(json.dumps(data))
    out = tmp_path / "ship.json"
    code, _, err = run("export", "--file", str(store), "--kernel", "gemm", "-o", str(out))
    assert code == 1
    assert "entry 't.py::test_gemm[256]' of device 'NVIDIA H100 80GB HBM3 / sm_90': field 'key.M'" in err
    assert not out.exists()


def test_the_output_may_not_be_the_store(store: Path) -> None:
    before = store.read_text()
    code, _, err = run("export", "--file", str(store), "--kernel", "gemm", "-o", str(store))
    assert code == 1
    assert "is the store read" in err
    assert store.read_text() == before
