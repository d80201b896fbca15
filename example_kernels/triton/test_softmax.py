"""Tunable fused row-wise softmax in Triton (one read and one write of each row).

Each program handles ``ROWS_PER_PROGRAM`` consecutive rows, one whole row at a time in a block of
the next power of two above the row length; tuning chooses the rows per program and the warps
and pipeline stages. Checked against ``torch.softmax``. On a GPU the input is 8192 x 4096 fp32
(``AUTOTUNE_SOFTMAX_ROWS``/``_COLS``); under ``TRITON_INTERPRET=1`` it is 64 x 100.

Provenance: the kernel's structure (a row in one block, max-subtraction, exp, sum, divide, masked
to the row length) follows Triton's tutorial "Fused Softmax" (python/tutorials/02-fused-softmax.py
of triton-lang/triton; MIT licence, text in LICENSE-triton beside this file).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from pytest_autotune import Set, tunable  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
ROWS = int(os.environ.get("AUTOTUNE_SOFTMAX_ROWS", "64" if INTERPRETED else "8192"))
COLS = int(os.environ.get("AUTOTUNE_SOFTMAX_COLS", "100" if INTERPRETED else "4096"))


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, ROWS_PER_PROGRAM: tl.constexpr):  # fmt: skip
    """Softmax of ``ROWS_PER_PROGRAM`` rows per program."""
    first = tl.program_id(0) * ROWS_PER_PROGRAM
    cols = tl.arange(0, BLOCK_SIZE)
    inside = cols < n_cols
    for offset in range(ROWS_PER_PROGRAM):
        row = first + offset
        if row < n_rows:
            x = tl.load(in_ptr + row * in_stride + cols, mask=inside, other=-float("inf"))
            shifted = x - tl.max(x, axis=0)
            numerator = tl.exp(shifted)
            y = numerator / tl.sum(numerator, axis=0)
            tl.store(out_ptr + row * out_stride + cols, y, mask=inside)


def softmax(x: Any, y: Any, **config: Any) -> Any:
    """Launch :func:`softmax_kernel` for ``y = softmax(x, dim=1)`` with ``config``."""
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    grid = (triton.cdiv(rows, config["ROWS_PER_PROGRAM"]),)
    return softmax_kernel[grid](y, x, x.stride(0), y.stride(0), rows, cols, BLOCK_SIZE=block, **config)


@tunable(
    ROWS_PER_PROGRAM=Set(1, 2, 4, 8, 16, default=1),
    num_warps=Set(1, 2, 4, 8, 16, default=4),
    num_stages=Set(1, 2, 3, 4, default=2),
)
def test_softmax(autotune, torch_device):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn((ROWS, COLS), generator=generator).to(torch_device)
    y = torch.empty_like(x)
    autotune.measure(lambda: softmax(x, y, **autotune.config))
    torch.testing.assert_close(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-5)
    autotune.metric("GB/s", lambda seconds: 2 * x.numel() * x.element_size() / seconds / 1e9)
