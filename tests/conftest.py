"""Shared test configuration (pytester is enabled in pyproject addopts)."""
