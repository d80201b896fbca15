"""gpytorch, imported once with its dependency's import-time deprecation warning silenced.

``linear_operator`` (gpytorch's algebra backend) decorates a few helpers with
``torch.jit.script`` when it is imported, which recent torch releases answer
with a ``DeprecationWarning`` that users would see on every run although
nothing in this package uses TorchScript. The warning is filtered for that
import only; every other warning stays visible.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings(
        "ignore", message=r".*torch\.jit\.script.*deprecated", category=DeprecationWarning
    )
    import gpytorch

__all__ = ["gpytorch"]
