"""Does the regression gate catch slowdowns without false alarms? Check and compare modes.

``project_files/`` holds the files copied into the temporary project the gate benchmarks check.
"""
