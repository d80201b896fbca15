"""The torch backend: Triton kernels and torch code on CUDA GPUs (``torch_device``).

Modules: :mod:`~.backend` (the :class:`~pytest_autotune.backends.base.Backend`: devices keyed like
the CUDA backend's, limits, event timing with an L2 flush), :mod:`~.events` (torch's CUDA events),
:mod:`~.errors` (Triton's errors as labelled infeasible trials), :mod:`~.triton_compile` (compile a
Triton kernel for a named target without a GPU, and read its shared memory and registers),
:mod:`~.triton_configs` (a ``triton.autotune`` config list as a ``@tunable`` declaration),
:mod:`~.fixtures` (``torch_device``). Importing this package imports neither torch nor triton.
"""
