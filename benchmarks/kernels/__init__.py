"""How well are the example OpenCL kernels tuned? Their exhaustive measurements and their replay."""
