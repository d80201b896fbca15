"""Ports of CLTune's and pyATF's examples (a package: see ``example_kernels/__init__.py``)."""
