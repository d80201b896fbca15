"""The one error the commands report: its message is printed, the exit status is 1."""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A command cannot do what was asked (missing or damaged file, bad ref, unknown device)."""
