// Point in polygon by the crossing number: a point is inside when a ray from it in the +x
// direction crosses the polygon's edges an odd number of times (Sunday, "Inclusion of a Point in
// a Polygon", 2001).
//
// A port of Kernel Tuner's CUDA example "pnpoly" (examples/cuda/pnpoly.cu and pnpoly.py of
// KernelTuner/kernel_tuner, Apache License 2.0; provenance and differences in README.md beside
// this file), written anew for pytest-autotune with the example's tuning parameters:
//   block_size_x            threads per block
//   tile_size               points per thread, block_size_x apart
//   between_method          0-3: four ways to test whether y lies between two vertices' y
//   use_precomputed_slopes  read each edge's slope from an array instead of dividing
//   use_method              0: flip a flag per crossing (branch); 1: count crossings (no branch)
// VERTICES is the number of polygon vertices (a define of the test).

__device__ __forceinline__ bool between(float a, float b, float c) {
#if between_method == 0
    return (b > a) != (c > a);
#elif between_method == 1
    return (b <= a && c > a) || (b > a && c <= a);
#elif between_method == 2
    return (a - b) == 0.0f || (a - b) * (a - c) < 0.0f;
#else
    return (a - b) * (a - c) < 0.0f || (a - b) == 0.0f;
#endif
}

extern "C" __global__ void pnpoly(int* __restrict__ inside, const float2* __restrict__ points,
                                  const float2* __restrict__ vertices, const float* __restrict__ slopes,
                                  int n) {
    const int first = blockIdx.x * block_size_x * tile_size + threadIdx.x;
    float2 p[tile_size];
    int count[tile_size];
#pragma unroll
    for (int t = 0; t < tile_size; ++t) {
        const int i = first + t * block_size_x;
        p[t] = i < n ? points[i] : make_float2(0.0f, 0.0f);
        count[t] = 0;
    }
    for (int j = 0, k = VERTICES - 1; j < VERTICES; k = j++) {
        const float2 vj = vertices[j], vk = vertices[k];
#if use_precomputed_slopes
        const float slope = slopes[j];
#else
        const float slope = (vk.x - vj.x) / (vk.y - vj.y);
#endif
#pragma unroll
        for (int t = 0; t < tile_size; ++t) {
#if use_method == 0
            if (between(p[t].y, vj.y, vk.y) && p[t].x < slope * (p[t].y - vj.y) + vj.x) count[t] = !count[t];
#else
            count[t] += between(p[t].y, vj.y, vk.y) && (p[t].x < vj.x + slope * (p[t].y - vj.y));
#endif
        }
    }
#pragma unroll
    for (int t = 0; t < tile_size; ++t) {
        const int i = first + t * block_size_x;
        if (i < n) inside[i] = count[t] & 1;
    }
}
