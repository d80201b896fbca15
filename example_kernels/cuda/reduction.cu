// The sum of n floats, in two steps: this kernel writes one partial sum per block, the host
// (or a second launch) adds the partials.
//
// Each of the BLOCK threads of a block first adds ITEMS elements, BLOCK apart (coalesced), then
// the block adds its BLOCK values: in shared memory (dynamic, BLOCK floats), halving the active
// threads each step, or, with WARP_SHUFFLE, within each warp by shuffles and across the warps in
// shared memory.
//
// Defines (from the configuration): BLOCK, ITEMS, WARP_SHUFFLE.

extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* __restrict__ partial, int n) {
    extern __shared__ float values[];
    const int t = threadIdx.x;
    const size_t first = (size_t)blockIdx.x * BLOCK * ITEMS + t;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const size_t at = first + (size_t)i * BLOCK;
        if (at < (size_t)n) sum += x[at];
    }
#if WARP_SHUFFLE
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (BLOCK <= 32) {
        if (t == 0) partial[blockIdx.x] = sum;
        return;
    }
    if (t % 32 == 0) values[t / 32] = sum;
    __syncthreads();
    if (t < 32) {
        sum = t < BLOCK / 32 ? values[t] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (t == 0) partial[blockIdx.x] = sum;
    }
#else
    values[t] = sum;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (t < half) values[t] += values[t + half];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = values[0];
#endif
}
