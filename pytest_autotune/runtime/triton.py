"""``@tuned``: a decorator in place of ``triton.autotune`` that launches the stored configuration.

::

    @runtime.tuned(kernel="matmul", key=["M", "N", "K"], store="autotune.json", configs=CONFIGS)
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, ..., BLOCK_M: tl.constexpr, ...): ...

    matmul_kernel[grid](a, b, c, M, N, K, ...)     # as with triton.autotune

The test tunes the same ``@triton.jit`` function with ``@tunable(**from_triton(CONFIGS),
kernel="matmul", key=("M", "N", "K"))`` and parametrizes it by ``M``, ``N`` and ``K``; the
application's launch then reads the key's values from its arguments (by name, as
``triton.autotune``'s ``key=`` does), asks the store (:meth:`TunedConfigs.choose
<pytest_autotune.runtime.reader.TunedConfigs.choose>`: this device, else the same architecture or
vendor; the same key, else the nearest), and launches with that configuration's constexprs and
``num_warps``/``num_stages`` as launch keywords. Nothing is benchmarked at run time. The choice is
kept per key, so a later launch with the same key costs a tuple, a dict lookup and the keyword merge
over calling the kernel with the configuration directly.

``configs=`` (``triton.Config`` objects or dicts) is the declared list: a stored configuration
outside it is an error naming the entry, and its first config is the default when no entry fits.
``tune_on_miss=True`` does what ``triton.autotune`` does for a key the store has no exact entry
for (this device and this key): it times every declared config on the launch's own arguments
(``triton.testing.do_bench``, or the ``bench=`` callable) and keeps the fastest for the rest of the
process; as with ``triton.autotune`` (without ``reset_to_zero``/``restore_value``), the kernel then
runs several times on those arguments. Nothing is written to the store: ``pytest --autotune``
remains its one writer. With ``PYTEST_AUTOTUNE_CAPTURE=DIR``, each key's first launch saves its
arguments first (:mod:`~pytest_autotune.runtime.captures`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_autotune.runtime.captures import CAPTURE_ENV, capture
from pytest_autotune.runtime.devices import DeviceId, torch_device
from pytest_autotune.runtime.reader import LOGGER, TunedConfigError, load

__all__ = ["TunedKernel", "tuned"]

#: ``bench(fn) -> seconds`` (or any number that orders the configurations: lower is faster).
Bench = Callable[[Callable[[], Any]], float]


def _do_bench(fn: Callable[[], Any]) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn))


class TunedKernel:
    """A ``@triton.jit`` function whose launches take the stored configuration (module docstring)."""

    def __init__(
        self,
        fn: Any,
        *,
        kernel: str,
        key: Sequence[str],
        store: str | os.PathLike[str],
        configs: Sequence[Any] | None,
        default: Mapping[str, Any] | None,
        device: DeviceId | str | None,
        tune_on_miss: bool,
        bench: Bench | None,
    ) -> None:
        names = list(getattr(fn, "arg_names", ()))
        missing = [name for name in key if name not in names]
        if missing:
            raise TypeError(
                f"tuned(kernel={kernel!r}): key {missing[0]!r} is not an argument of "
                f"{getattr(fn, '__name__', fn)!r} (arguments: {', '.join(names) or 'none'})"
            )
        self.fn = fn
        self.kernel = kernel
        self.key = tuple(key)
        self.positions = tuple(names.index(name) for name in key)
        self.store = store
        self.configs = _flat(configs)
        self.default = dict(default) if default is not None else (self.configs[0] if self.configs else None)
        self.device = device
        self.tune_on_miss = tune_on_miss
        self.bench = bench or _do_bench
        #: The configuration launched per key value tuple (filled on each key's first launch).
        self.chosen: dict[tuple[Any, ...], dict[str, Any]] = {}

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """``kernel[grid](*args, **kwargs)``, as for a ``@triton.jit`` function."""
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Launch with the configuration of this launch's key (chosen on the key's first launch)."""
        try:
            values = tuple([args[i] for i in self.positions])
        except IndexError:  # a key argument given by name
            values = tuple(
                kwargs[name] if name in kwargs else args[i]
                for name, i in zip(self.key, self.positions, strict=True)
            )
        config = self.chosen.get(values)
        if config is None:
            config = self._resolve(values, grid, args, kwargs)
        return self.fn[grid](*args, **kwargs, **config)

    def _resolve(self, values: tuple[Any, ...], grid: Any, args: Any, kwargs: Any) -> dict[str, Any]:
        if self.device is None:
            self.device = torch_device()
        key = dict(zip(self.key, values, strict=True))
        if os.environ.get(CAPTURE_ENV):  # this key's first launch: its inputs, to tune on later
            named = dict(zip(getattr(self.fn, "arg_names", ()), args, strict=False))  # the rest by name
            capture(self.kernel, key, {**named, **kwargs})
        choice = load(self.store).choose(
            self.kernel, device=self.device, key=key, default=self.default, space=self.configs
        )
        config = dict(choice.config)
        exact = choice.device_match == "exact" and choice.size_match == "exact"
        if self.tune_on_miss and not exact:
            config = self._tune(key, grid, args, kwargs)
        self.chosen[values] = config
        return config

    def _tune(self, key: Mapping[str, Any], grid: Any, args: Any, kwargs: Any) -> dict[str, Any]:
        if not self.configs:
            raise TunedConfigError(f"tuned(kernel={self.kernel!r}): tune_on_miss=True needs configs=[...]")
        launch = self.fn[grid]
        timed: list[tuple[float, dict[str, Any]]] = []
        for config in self.configs:

            def once(config: dict[str, Any] = config) -> Any:
                return launch(*args, **kwargs, **config)

            timed.append((self.bench(once), config))
        best = min(timed, key=lambda pair: pair[0])[1]
        LOGGER.warning(
            "kernel %r: no stored entry for this device and key %s; tuned on first use over %d configs: %s",
            self.kernel,
            dict(key),
            len(self.configs),
            best,
        )
        return dict(best)


def _flat(configs: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    if configs is None:
        return None
    from pytest_autotune.backends.torch.triton_configs import config_dicts

    return config_dicts(configs)


def tuned(
    *,
    kernel: str,
    key: Sequence[str],
    store: str | os.PathLike[str] = "autotune.json",
    configs: Sequence[Any] | None = None,
    default: Mapping[str, Any] | None = None,
    device: DeviceId | str | None = None,
    tune_on_miss: bool = False,
    bench: Bench | None = None,
) -> Callable[[Any], TunedKernel]:
    """Decorate a ``@triton.jit`` function so that its launches take the stored configuration of
    ``kernel`` for their ``key`` values (module docstring). ``device`` defaults to the torch
    backend's device, keyed as the tests key it; ``default`` to the first of ``configs``."""
    if isinstance(key, str):
        key = [key]

    def decorate(fn: Any) -> TunedKernel:
        return TunedKernel(
            fn,
            kernel=kernel,
            key=key,
            store=store,
            configs=configs,
            default=default,
            device=device,
            tune_on_miss=tune_on_miss,
            bench=bench,
        )

    return decorate
