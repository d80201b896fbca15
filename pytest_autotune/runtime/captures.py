"""Capture one launch's inputs per problem-size key in the application, to tune on them later.

As Kernel Launcher does: run the application with ``PYTEST_AUTOTUNE_CAPTURE=DIR`` and the
run-time helpers save the inputs of the first launch of each kernel and key into
``DIR/<kernel>/<key>.npz`` (NumPy's format: arrays, torch tensors copied to the host, and numbers
as 0-d arrays). The Triton decorator (:func:`~pytest_autotune.runtime.triton.tuned`) does it on
each key's first launch; an OpenCL or CUDA host program calls :func:`capture` before its launch.
Without the variable nothing is saved and a call costs an environment lookup.

A ``@tunable`` test then tunes on what was captured::

    CAPTURED = runtime.captured_keys("captures", "saxpy")     # [{'N': 303104}, ...]

    @pytest.mark.parametrize("N", [key["N"] for key in CAPTURED])
    @tunable(**PARAMS, kernel="saxpy", key=("N",))
    def test_saxpy_captured(autotune, cl_queue, N):
        inputs = runtime.load_capture("captures", "saxpy", {"N": N})   # {'x': array, 'y': ..., 'a': ...}

A file is written once and never overwritten: delete it to capture that key again. Each file holds
the kernel name and the key (``__kernel__``, ``__key__``), which :func:`load_capture` checks.
Arguments that NumPy cannot hold as plain data (device buffers, None) are left out, and their names
are kept in ``__skipped__``. NumPy (and torch, for tensors) is imported only when something is saved.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CAPTURE_ENV", "capture", "capture_path", "captured_keys", "load_capture"]

#: The environment variable that turns capture on: the directory to save into.
CAPTURE_ENV = "PYTEST_AUTOTUNE_CAPTURE"
_META = ("__kernel__", "__key__", "__skipped__")
_done: set[tuple[str, str, str]] = set()
_lock = threading.Lock()


def capture_path(directory: str | os.PathLike[str], kernel: str, key: Mapping[str, Any] | None) -> Path:
    """``directory/<kernel>/<key>.npz``: the key as ``N=303104,dtype=f32`` (sorted, other characters
    as ``_``), ``unkeyed`` without one."""
    slug = ",".join(f"{name}={value}" for name, value in sorted((key or {}).items())) or "unkeyed"
    return Path(directory) / _safe(kernel) / f"{_safe(slug)}.npz"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9=,.+-]", "_", text)


def capture(
    kernel: str,
    key: Mapping[str, Any] | None,
    inputs: Mapping[str, Any],
    *,
    directory: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Save ``inputs`` (name to array, tensor or number) for ``kernel`` and ``key`` once.

    ``directory`` defaults to ``$PYTEST_AUTOTUNE_CAPTURE``; without either, nothing is saved. Returns
    the file written, or None: capture is off, this key was already captured by this process, or
    its file exists (never overwritten)."""
    where = directory if directory is not None else os.environ.get(CAPTURE_ENV)
    if not where:
        return None
    path = capture_path(where, kernel, key)
    memo = (str(where), kernel, path.name)
    with _lock:
        if memo in _done:
            return None
        _done.add(memo)
    if path.exists():
        return None
    bad = [name for name in inputs if name in _META]
    if bad:
        raise ValueError(f"capture(kernel={kernel!r}): input name {bad[0]!r} is reserved")
    import numpy as np

    arrays: dict[str, Any] = {}
    skipped: list[str] = []
    for name, value in inputs.items():
        array = _host_array(np, value)
        if array is None:
            skipped.append(name)
        else:
            arrays[name] = array
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(partial, "wb") as out:
        np.savez(
            out,
            __kernel__=np.array(kernel),
            __key__=np.array(json.dumps(dict(key or {}), sort_keys=True)),
            __skipped__=np.array(skipped, dtype=str),
            **arrays,
        )
    os.replace(partial, path)
    return path


def _host_array(np: Any, value: Any) -> Any:
    """``value`` as a NumPy array on the host, or None when it is no plain data."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if value is None:
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    return None if array.dtype == object else array


def load_capture(
    directory: str | os.PathLike[str], kernel: str, key: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The inputs :func:`capture` saved for ``kernel`` and ``key``: arrays, and 0-d values as NumPy
    scalars (``np.float32(2.5)`` stays a float32). Raises ``FileNotFoundError`` naming the file and
    the keys captured, ``ValueError`` when the file holds another kernel or key."""
    import numpy as np

    path = capture_path(directory, kernel, key)
    if not path.is_file():
        have = captured_keys(directory, kernel)
        raise FileNotFoundError(
            f"{path}: no capture of kernel {kernel!r} for key {dict(key or {})} (captured keys: "
            f"{have or 'none'}); run the application with {CAPTURE_ENV}={directory}"
        )
    with np.load(path, allow_pickle=False) as data:
        stored = (str(data["__kernel__"]), json.loads(str(data["__key__"])))
        wanted = (kernel, json.loads(json.dumps(dict(key or {}), sort_keys=True)))
        if stored != wanted:
            raise ValueError(
                f"{path}: holds kernel {stored[0]!r} key {stored[1]}, not {wanted[0]!r} key {wanted[1]}"
            )
        return {
            name: data[name][()] if data[name].ndim == 0 else data[name]
            for name in data.files
            if name not in _META
        }


def captured_keys(directory: str | os.PathLike[str], kernel: str) -> list[dict[str, Any]]:
    """The keys captured for ``kernel`` under ``directory`` (sorted; empty when there are none), to
    parametrize a ``@tunable`` test with."""
    import numpy as np

    folder = Path(directory) / _safe(kernel)
    keys: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
        with np.load(path, allow_pickle=False) as data:
            if str(data["__kernel__"]) == kernel:
                keys.append(json.loads(str(data["__key__"])))
    return sorted(keys, key=_order)


def _order(key: Mapping[str, Any]) -> tuple[tuple[str, int, float, str], ...]:
    """Numbers by value (65536 before 262144), then other values as text."""
    return tuple(
        (name, 0, float(value), "") if isinstance(value, int | float) else (name, 1, 0.0, str(value))
        for name, value in sorted(key.items())
    )
