"""Trial isolation in a worker process: the parent's side (``worker``), the worker's (``serve``),
their messages (``protocol``), the objective that runs in it (``isolated``) and what a crashed
worker printed (``output``)."""
