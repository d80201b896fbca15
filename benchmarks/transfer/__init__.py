"""How much does another device's tuning history speed up tuning a new one? And the histories shipped."""
