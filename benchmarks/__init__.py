"""Benchmarks, one folder per question; run from the repository root as ``python -m benchmarks NAME``.

``python -m benchmarks`` lists every benchmark with the question it answers (see ``__main__.py``);
``common.py`` holds what they share (paths, replay loading, the table printer).
"""
