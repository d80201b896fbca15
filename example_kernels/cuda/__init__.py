"""CUDA C examples on the ``cuda`` backend (a package: see ``example_kernels/__init__.py``)."""
