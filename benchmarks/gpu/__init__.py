"""What ``scripts/gpu-check`` measures on an NVIDIA GPU (issue 36): the table, its sections, and
the objective that runs an example's test body outside pytest."""
