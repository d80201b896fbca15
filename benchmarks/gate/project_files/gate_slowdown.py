"""The slowdown that ``benchmarks/gate/bench.py`` injects into the kernels of its temporary project.

The benchmark copies this file into the project, commits it with ``FRACTION = 0.0`` and, to inject
a slowdown, edits ``FRACTION`` in the working tree: a change of source, as a real regression is,
that a plain run and the ``--autotune-compare=HEAD`` mode both see and that no timer knows about.

* OpenCL kernels: each measured launch goes through :func:`launch`, which enqueues the kernel as
  the test would and then, when ``FRACTION`` is above zero, enqueues it again over a sub-grid of
  ``round(FRACTION x work-groups)`` of its work-groups, writing into a scratch copy of its output
  (so the result the test checks is untouched). The measured time spans all launches.
* The numpy kernel: :func:`extra_blocks` says how many of its blocks to compute once more.

The time added is not exactly ``FRACTION``: groups are whole, two cores run them in pairs, and a
re-run part may sit in cache; the benchmark measures and prints the slowdown each level realises.
"""

from __future__ import annotations

from typing import Any

FRACTION = 0.0

_scratch: dict[tuple[int, int], Any] = {}


def extra_blocks(blocks: int) -> int:
    """Blocks to compute once more: ``round(FRACTION x blocks)``."""
    return round(FRACTION * blocks)


def _sub_grids(
    global_size: tuple[int, ...], local_size: tuple[int, ...], extra: int
) -> list[tuple[int, ...]]:
    """Global sizes of at most two launches covering ``extra`` work-groups (whole rows, then a part row)."""
    groups = [g // loc for g, loc in zip(global_size, local_size, strict=True)]
    if len(groups) == 1:
        return [(extra * local_size[0],)]
    row = groups[0]
    rows, rest = divmod(extra, row)
    grids = []
    tail = tuple(local_size[2:])  # a third dimension is run one group deep
    if rows:
        grids.append((row * local_size[0], rows * local_size[1], *tail))
    if rest:
        grids.append((rest * local_size[0], local_size[1], *tail))
    return grids


def _scratch_for(buffer: Any) -> Any:
    import pyopencl as cl

    key = (id(buffer.context), buffer.size)
    if key not in _scratch:
        _scratch[key] = cl.Buffer(buffer.context, cl.mem_flags.READ_WRITE, size=buffer.size)
    return _scratch[key]


def launch(kernel: Any, out: int, queue: Any, global_size: Any, local_size: Any, *args: Any) -> Any:
    """Enqueue ``kernel`` as the test does; with ``FRACTION`` > 0 also the extra work (module docstring).

    ``out`` is the index in ``args`` of the output buffer. Returns the event, or the list of events.
    """
    event = kernel(queue, global_size, local_size, *args)
    if FRACTION <= 0:
        return event
    global_size, local_size = tuple(global_size), tuple(local_size)
    total = 1
    for size, local in zip(global_size, local_size, strict=True):
        total *= size // local
    extra = round(FRACTION * total)
    if not extra:
        return event
    moved = list(args)
    moved[out] = _scratch_for(args[out])
    events = [event]
    for grid in _sub_grids(global_size, local_size, extra):
        events.append(kernel(queue, grid, local_size, *moved))
    return events
