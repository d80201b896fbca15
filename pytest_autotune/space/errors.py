"""Errors raised while declaring or building a search space.

Every error names what is at fault (the parameter, the constraint) so that a
user can fix the declaration without reading a traceback.
"""

from __future__ import annotations


class SpaceError(ValueError):
    """A search space is declared wrongly (raised at declaration or build time).

    ``parameter`` names the parameter at fault when there is one.
    """

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class EmptySpaceError(SpaceError):
    """The constraints leave no valid configuration.

    ``parameter`` is the parameter at which the space became empty.
    """


class ConstraintError(SpaceError):
    """A constraint is malformed: unknown name, cycle, non-boolean result, ..."""
