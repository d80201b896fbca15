// z = a * x + y over N floats (out of place, so repeated launches give the same result).
//   WPT      elements per work-item
//   VW       vector width of the loads and stores (WPT is a multiple of VW)
//   STRIDED  1: a work-item's vectors are spread over the whole array, so that neighbouring
//            work-items touch neighbouring vectors (GPU-style coalescing);
//            0: each work-item owns one contiguous chunk of WPT elements
// The launch uses N / WPT work-items in work-groups of LS.

#if VW == 1
typedef float realV;
#define LOADV(i, p) ((p)[i])
#define STOREV(v, i, p) ((p)[i] = (v))
#else
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
typedef XCAT(float, VW) realV;
#define LOADV(i, p) XCAT(vload, VW)((i), (p))
#define STOREV(v, i, p) XCAT(vstore, VW)((v), (i), (p))
#endif

__kernel void saxpy(const float a,
                    __global const float* restrict x,
                    __global const float* restrict y,
                    __global float* restrict z)
{
    const int gid = get_global_id(0);
#if STRIDED
    const int threads = get_global_size(0);
    for (int w = 0; w < WPT / VW; ++w) {
        const int v = w * threads + gid;  // index in vectors of VW floats
        STOREV(a * LOADV(v, x) + LOADV(v, y), v, z);
    }
#else
    for (int w = 0; w < WPT / VW; ++w) {
        const int v = gid * (WPT / VW) + w;
        STOREV(a * LOADV(v, x) + LOADV(v, y), v, z);
    }
#endif
}
