"""Device backends: discovery, builds, timing and error labels per kind of device."""
