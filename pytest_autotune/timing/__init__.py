"""Timing: timers, robust statistics, and the regression rule."""
