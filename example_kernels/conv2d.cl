// 2D convolution (cross-correlation, "valid" region): out[y][x] = sum_{i,j} in[y+i][x+j] * filt[i][j]
// for an F x F filter; the input is (height + F - 1) x (width + F - 1), the output height x width.
//   BX, BY          work-group size along x and y
//   TX, TY          outputs per work-item along x and y (strided by BX / BY, so that neighbouring
//                   work-items compute neighbouring outputs)
//   LOCAL           1: stage the work-group's input tile (with its halo) in local memory
//   CONST_FILTER    1: the filter lives in __constant memory, 0: in __global memory
// F (the filter size) is a problem size, also passed as a define.

#if CONST_FILTER
#define FILTER_SPACE __constant
#else
#define FILTER_SPACE __global const
#endif

#define TILE_W (BX * TX + F - 1)
#define TILE_H (BY * TY + F - 1)

__kernel __attribute__((reqd_work_group_size(BX, BY, 1)))
void conv2d(__global const float* restrict in,
            FILTER_SPACE float* restrict filt,
            __global float* restrict out,
            const int width, const int height)
{
    const int in_width = width + F - 1;
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int ox = get_group_id(0) * BX * TX;  // first output column of the work-group
    const int oy = get_group_id(1) * BY * TY;  // first output row of the work-group

    float acc[TY][TX];
    for (int y = 0; y < TY; ++y)
        for (int x = 0; x < TX; ++x)
            acc[y][x] = 0.0f;

#if LOCAL
    __local float tile[TILE_H][TILE_W];
    for (int j = ty; j < TILE_H; j += BY)
        for (int i = tx; i < TILE_W; i += BX)
            tile[j][i] = in[(oy + j) * in_width + ox + i];
    barrier(CLK_LOCAL_MEM_FENCE);
#define INPUT(row, col) tile[row][col]
#else
#define INPUT(row, col) in[(oy + (row)) * in_width + ox + (col)]
#endif

    for (int fy = 0; fy < F; ++fy)
        for (int fx = 0; fx < F; ++fx) {
            const float w = filt[fy * F + fx];
            for (int y = 0; y < TY; ++y)
                for (int x = 0; x < TX; ++x)
                    acc[y][x] += INPUT(ty + y * BY + fy, tx + x * BX + fx) * w;
        }

    for (int y = 0; y < TY; ++y)
        for (int x = 0; x < TX; ++x)
            out[(oy + ty + y * BY) * width + ox + tx + x * BX] = acc[y][x];
}
