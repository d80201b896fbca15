// A compute-bound kernel for the regression-gate benchmark: two dependent chains of WORK
// multiply-adds per element, so the run time grows in proportion to WORK (the benchmark injects
// a slowdown by raising WORK). v -> a*v + b converges to b / (1 - a), so the result is known.
//   VW  elements per work-item (vector width)

#if VW == 1
typedef float realV;
#define LOADV(i, p) ((p)[i])
#define STOREV(v, i, p) ((p)[i] = (v))
#else
#define CAT(x, y) x##y
#define XCAT(x, y) CAT(x, y)
typedef XCAT(float, VW) realV;
#define LOADV(i, p) XCAT(vload, VW)((i), (p))
#define STOREV(v, i, p) XCAT(vstore, VW)((v), (i), (p))
#endif

__kernel void gate(__global const float* restrict x, __global float* restrict y, const float a, const float b)
{
    const int gid = get_global_id(0);
    realV v = LOADV(gid, x);
    realV w = v * 0.5f;
    for (int r = 0; r < WORK; ++r) {
        v = mad(v, (realV)(a), (realV)(b));
        w = mad(w, (realV)(a), (realV)(b));
    }
    STOREV(v + w, gid, y);
}
