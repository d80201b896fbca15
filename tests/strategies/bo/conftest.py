"""Tests of the Bayesian engine run torch single-threaded, as the strategy itself does.

On a shared 2-core machine torch's default of one thread per core makes small
linear algebra many times slower whenever another process is busy.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _single_torch_thread() -> Iterator[None]:
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
