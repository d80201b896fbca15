"""What does pytest-autotune cost? The plugin's import and per-test overhead, the engine's per suggestion."""
