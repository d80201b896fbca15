"""Does pytest-autotune survive faults and bad input? Interrupts, kills, damaged stores, hostile strings."""
