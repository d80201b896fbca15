"""``python -m pytest_autotune export``: what an application ships, from ``autotune.json``.

Two formats, for the entries of the kernels named (``--kernel``, repeated; a kernel name from
``@tunable(kernel=...)``, or a test id for a test that declares none), read and checked by the
run-time reader (:mod:`pytest_autotune.runtime`, so a damaged entry, an entry of another kernel or
two entries for one device and key are errors naming the entry, and nothing is written):

* ``--format json``: a minimal store with only those entries, and of each only what the run-time
  reader uses (``config``, ``space_hash``, ``kernel``, ``key``; the device's ``info``), in the
  store's canonical text; :func:`pytest_autotune.runtime.load` reads it like ``autotune.json``.
* ``--format header``: a C/C++ header for one kernel, one block of ``#define`` lines per device (as
  Kernel Tuner's ``create_device_targets``): the block of a device is selected by compiling with
  ``-DAUTOTUNE_DEVICE_<ID>`` (the IDs are listed at the top: the device key in capitals, other
  characters as ``_``). Each block also defines ``AUTOTUNE_<KERNEL>_TUNED 1``. Without a device
  macro the ``#else`` block applies: the configuration of ``--fallback DEVICE``, else nothing but
  ``AUTOTUNE_<KERNEL>_TUNED 0``, so that the kernel's own guarded defaults
  (``#ifndef BLOCK`` / ``#define BLOCK 64`` / ``#endif``) apply. Values are written as the test's
  defines are (booleans 0/1, floats with an ``f``, permutations as ``NAME_0``, ... ``NAME_LEN``).
  A kernel tuned per problem size needs ``--key NAME=VALUE`` for each key name: each device's block
  then holds its entry for the nearest key (the run-time reader's rule), named in a comment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_autotune.backends import define_macros
from pytest_autotune.commands.errors import CommandError
from pytest_autotune.runtime.reader import TunedConfigError, TunedConfigs
from pytest_autotune.store.document import SCHEMA_VERSION, dumps

__all__ = ["export_header", "export_json", "parse_key"]


def _read(path: Path) -> TunedConfigs:
    try:
        return TunedConfigs.read(path)
    except TunedConfigError as exc:
        raise CommandError(str(exc)) from None


def export_json(path: Path, kernels: Sequence[str]) -> str:
    """The text of the minimal store holding the entries of ``kernels`` (module docstring)."""
    tuned = _read(path)
    devices: dict[str, Any] = {}
    try:
        for kernel in kernels:
            for device, nodeid, entry in tuned.entries(kernel):
                slot = devices.setdefault(device, {"info": tuned.device_info(device), "tests": {}})
                minimal: dict[str, Any] = {
                    k: v for k, v in entry.to_json().items() if k in ("config", "space_hash", "kernel", "key")
                }
                slot["tests"][nodeid] = minimal
    except TunedConfigError as exc:
        raise CommandError(str(exc)) from None
    return dumps({"schema_version": SCHEMA_VERSION, "devices": devices})


def parse_key(items: Sequence[str]) -> dict[str, Any] | None:
    """``["M=512", "dtype=f32"]`` -> ``{"M": 512, "dtype": "f32"}`` (numbers where they parse)."""
    if not items:
        return None
    key: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--key {item!r}: write NAME=VALUE, e.g. --key M=512")
        value: Any = text
        for kind in (int, float):
            try:
                value = kind(text)
                break
            except ValueError:
                continue
        key[name.strip()] = value
    return key


def device_macro(device: str) -> str:
    """``"NVIDIA H100 80GB HBM3 / sm_90"`` -> ``"AUTOTUNE_DEVICE_NVIDIA_H100_80GB_HBM3_SM_90"``."""
    return "AUTOTUNE_DEVICE_" + re.sub(r"[^A-Z0-9]+", "_", device.upper()).strip("_")


def _defines(config: Mapping[str, Any], where: str) -> list[str]:
    try:
        macros = define_macros(dict(config))
    except ValueError as exc:
        raise CommandError(f"{where}: cannot write its configuration as #define lines: {exc}") from None
    return [f"#define {macro} {text}" for macro, text in macros]


def export_header(path: Path, kernel: str, *, key: dict[str, Any] | None, fallback: str | None) -> str:
    """The text of the C/C++ header for ``kernel`` (module docstring)."""
    tuned = _read(path)
    try:
        entries = tuned.entries(kernel)
        keyed = entries[0][2].key
        if keyed is not None and key is None:
            names = " ".join(f"--key {name}=VALUE" for name in keyed)
            raise CommandError(f"{path}: kernel {kernel!r} is tuned per problem size; give {names}")
        devices = sorted({device for device, _, _ in entries})
        chosen = [(device, tuned.choose(kernel, device=device, key=key)) for device in devices]
    except TunedConfigError as exc:
        raise CommandError(str(exc)) from None
    macros = [device_macro(device) for device in devices]
    clash = sorted({m for m in macros if macros.count(m) > 1})
    if clash:
        raise CommandError(f"{path}: two devices of kernel {kernel!r} give the same macro {clash[0]}")
    if fallback is not None and fallback not in devices:
        listed = ", ".join(devices)
        raise CommandError(
            f"--fallback {fallback!r}: no entry of kernel {kernel!r} on it (devices: {listed})"
        )
    name = re.sub(r"[^A-Z0-9]+", "_", kernel.upper()).strip("_") or "KERNEL"
    flag = f"AUTOTUNE_{name}_TUNED"
    without = (
        f"the block of {fallback!r}, with {flag} 0"
        if fallback
        else f"only {flag} 0 is defined (the kernel keeps its own guarded defaults)"
    )
    lines = [
        f"/* Tuned configurations of kernel {kernel!r}, from {path.name}; written by",
        "   `python -m pytest_autotune export --format header`: do not edit, re-export.",
        *([f"   Entries for the key nearest {key}."] if key else []),
        "   Compile with one device macro to select its block:",
        *(f"     -D{macro}  ({device})" for macro, device in zip(macros, devices, strict=True)),
        f"   Without one: {without}.",
        "*/",
        f"#ifndef AUTOTUNE_{name}_H",
        f"#define AUTOTUNE_{name}_H",
        "",
    ]
    for position, ((device, choice), macro) in enumerate(zip(chosen, macros, strict=True)):
        lines.append(f"#{'if' if position == 0 else 'elif'} defined({macro})")
        shown_key = "" if choice.key is None else f", key {dict(choice.key)}"
        lines += [f"/* {device}: entry {choice.entry!r}{shown_key} */", f"#define {flag} 1"]
        lines += _defines(choice.config, choice.where)
    lines += ["#else", f"#define {flag} 0"]
    if fallback is not None:
        choice = dict(chosen)[fallback]
        lines += [f"/* fallback: the block of {fallback} */", *_defines(choice.config, choice.where)]
    lines += ["#endif", "", f"#endif /* AUTOTUNE_{name}_H */", ""]
    return "\n".join(lines)
