"""Triton examples on the ``torch`` backend (a package: see ``example_kernels/__init__.py``)."""
