// out = transpose(in) for an n x n row-major matrix of floats (n a multiple of the tile sizes).
//   TILE_X, TILE_Y  a work-group transposes a TILE_Y x TILE_X tile of the input
//   ROWS            the work-group has TILE_X x ROWS work-items, each handling TILE_Y / ROWS rows
//   LOCAL           1: stage the tile in local memory so that both the reads and the writes are
//                   contiguous; 0: read rows and write columns directly
//   PAD             extra local-memory column per tile row (avoids bank conflicts on GPUs)
// The work-group is one-dimensional (TILE_X * ROWS work-items): with a two-dimensional one, PoCL
// takes up to minutes to build some variants of the row loop.

__kernel __attribute__((reqd_work_group_size(TILE_X * ROWS, 1, 1)))
void transpose(__global const float* restrict in, __global float* restrict out, const int n)
{
    const int tx = get_local_id(0) % TILE_X;
    const int ty = get_local_id(0) / TILE_X;
    const int bx = get_group_id(0) * TILE_X;  // first input column of the tile
    const int by = get_group_id(1) * TILE_Y;  // first input row of the tile
#if LOCAL
    __local float tile[TILE_Y][TILE_X + PAD];
    for (int j = ty; j < TILE_Y; j += ROWS)
        tile[j][tx] = in[(by + j) * n + bx + tx];
    barrier(CLK_LOCAL_MEM_FENCE);
    // Write the tile's columns as output rows, consecutive work-items on consecutive addresses.
    for (int e = get_local_id(0); e < TILE_X * TILE_Y; e += TILE_X * ROWS) {
        const int col = e / TILE_Y;  // input column = output row offset
        const int row = e % TILE_Y;  // input row = output column offset
        out[(bx + col) * n + by + row] = tile[row][col];
    }
#else
    for (int j = ty; j < TILE_Y; j += ROWS)
        out[(bx + tx) * n + by + j] = in[(by + j) * n + bx + tx];
#endif
}
