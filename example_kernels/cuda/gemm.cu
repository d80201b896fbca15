// C = A @ B for row-major float32 matrices, M x K times K x N.
//
// A block of BX x BY threads computes a TILE_M x TILE_N tile of C (TILE_M = BY * WY rows,
// TILE_N = BX * WX columns): each thread WY x WX outputs, at a stride of BY rows and BX columns so
// that neighbouring threads touch neighbouring addresses. The K loop stages TK-deep slices of A
// (transposed) and B in shared memory, then each thread reads a column of A's slice and a row of
// B's into registers and accumulates their outer product.
//
// Defines (from the configuration): BX, BY, WX, WY, TK.

extern "C" __global__ void gemm(const float* __restrict__ A, const float* __restrict__ B,
                                float* __restrict__ C, int M, int N, int K) {
    const int TILE_M = BY * WY;
    const int TILE_N = BX * WX;
    __shared__ float a_slice[TK][BY * WY];
    __shared__ float b_slice[TK][BX * WX];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int thread = ty * BX + tx;
    const int first_row = blockIdx.y * TILE_M, first_col = blockIdx.x * TILE_N;
    float acc[WY][WX];
#pragma unroll
    for (int y = 0; y < WY; ++y)
#pragma unroll
        for (int x = 0; x < WX; ++x) acc[y][x] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int i = thread; i < TILE_M * TK; i += BX * BY) {
            const int r = i / TK, c = i % TK;
            const int row = first_row + r, col = k0 + c;
            a_slice[c][r] = (row < M && col < K) ? A[(size_t)row * K + col] : 0.0f;
        }
        for (int i = thread; i < TK * TILE_N; i += BX * BY) {
            const int r = i / TILE_N, c = i % TILE_N;
            const int row = k0 + r, col = first_col + c;
            b_slice[r][c] = (row < K && col < N) ? B[(size_t)row * N + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TK; ++k) {
            float a[WY], b[WX];
#pragma unroll
            for (int y = 0; y < WY; ++y) a[y] = a_slice[k][ty + y * BY];
#pragma unroll
            for (int x = 0; x < WX; ++x) b[x] = b_slice[k][tx + x * BX];
#pragma unroll
            for (int y = 0; y < WY; ++y)
#pragma unroll
                for (int x = 0; x < WX; ++x) acc[y][x] += a[y] * b[x];
        }
        __syncthreads();
    }
#pragma unroll
    for (int y = 0; y < WY; ++y)
#pragma unroll
        for (int x = 0; x < WX; ++x) {
            const int row = first_row + ty + y * BY, col = first_col + tx + x * BX;
            if (row < M && col < N) C[(size_t)row * N + col] = acc[y][x];
        }
}
