"""What an OpenCL build tells the kernel author (issue 38, items 15 and 16).

A kernel given as a file names that file and its lines in compiler errors (not the driver's
temporary file), and a kernel that ``#define``s a tuned parameter itself is reported once.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

cl = pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl

BROKEN_KERNEL = """\
__kernel void scale(__global float *x) {
    int i = get_global_id(0);
#if BROKEN
    x[i] = undeclared_name;
#endif
    x[i] = 2.0f * x[i];
}
"""

TEST_WITH_FILE = """
from pathlib import Path
import numpy as np
import pyopencl as cl
from pytest_autotune import Set, tunable

KERNEL = Path(__file__).parent / "scale.cl"

@tunable(BROKEN=Set(0, 1, default=1))
def test_scale(autotune, cl_queue):
    program = autotune.build(cl_queue.context, KERNEL)
    host = np.arange(64, dtype=np.float32)
    buffer = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    autotune.measure(lambda: program.scale(cl_queue, (64,), None, buffer), repeat=1)
"""


def test_build_errors_name_the_kernel_file_and_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "scale.cl").write_text(BROKEN_KERNEL)
    pytester.makepyfile(test_k=TEST_WITH_FILE)
    result = pytester.runpytest("-p", "no:cacheprovider")  # a plain run builds the default, BROKEN=1
    output = result.stdout.str()
    result.assert_outcomes(failed=1)
    # the compile failure is reported with the file as written and the line of the error
    assert re.search(r"scale\.cl:4:\d+: use of undeclared identifier 'undeclared_name'", output), output
    assert "tempfile_" not in output


def test_build_program_names_a_source_name_in_its_log() -> None:
    from pytest_autotune.backends.opencl import KernelBuildError, build_program, select_device

    device = select_device(None)
    context = cl.Context([device])
    with pytest.raises(KernelBuildError) as caught:
        build_program(context, BROKEN_KERNEL, {"BROKEN": 1}, source_name="kernels/scale.cl")
    assert re.search(r"kernels/scale\.cl:4:\d+: use of undeclared identifier", caught.value.log), (
        caught.value.log
    )


def test_a_kernel_that_redefines_a_tuned_define_is_reported_once(tmp_path: Path) -> None:
    from pytest_autotune.backends.opencl import build_program, select_device
    from pytest_autotune.warning_types import AutotuneDefineWarning

    source = "#define WIDTH 4096\n__kernel void k(__global int *x) { x[0] = WIDTH; }\n"
    context = cl.Context([select_device(None)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_program(context, source, {"WIDTH": 512}, source_name="k.cl")
        build_program(context, source, {"WIDTH": 256}, source_name="k.cl")
    found = [w for w in caught if issubclass(w.category, AutotuneDefineWarning)]
    assert len(found) == 1
    assert str(found[0].message).startswith("k.cl:1: the source #defines WIDTH, which is also a tuned define")
    guarded = (
        "#ifndef WIDTH\n#define WIDTH 4096\n#endif\n__kernel void k(__global int *x) { x[0] = WIDTH; }\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutotuneDefineWarning)
        build_program(context, guarded, {"WIDTH": 512})
