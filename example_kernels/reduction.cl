// Partial sums of x[0..n): partial[g] = sum of the elements read by work-group g.
// The host adds the (n / (WG * EPT)) partial sums.
//   WG       work-group size (the local-memory tree has WG entries)
//   EPT      elements summed by each work-item before the tree
//   VW       vector width of the loads (EPT is a multiple of VW)
//   UNROLL   unroll factor of the per-work-item loop
//   STRIDED  1: consecutive work-items read consecutive vectors (GPU-style coalescing);
//            0: each work-item reads one contiguous chunk of EPT elements

#if VW == 1
typedef float realV;
#define LOADV(i, p) ((p)[i])
#define HSUM(v) (v)
#elif VW == 2
typedef float2 realV;
#define LOADV(i, p) vload2((i), (p))
#define HSUM(v) ((v).s0 + (v).s1)
#elif VW == 4
typedef float4 realV;
#define LOADV(i, p) vload4((i), (p))
#define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#elif VW == 8
typedef float8 realV;
#define LOADV(i, p) vload8((i), (p))
#define HSUM(v) ((((v).s0 + (v).s1) + ((v).s2 + (v).s3)) + (((v).s4 + (v).s5) + ((v).s6 + (v).s7)))
#endif

#define VPT (EPT / VW)  // vectors per work-item

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce(__global const float* restrict x, __global float* restrict partial)
{
    __local float scratch[WG];
    const int lid = get_local_id(0);
    const int gid = get_global_id(0);
    realV acc = (realV)(0.0f);
#pragma unroll UNROLL
    for (int w = 0; w < VPT; ++w) {
#if STRIDED
        acc += LOADV(w * (int)get_global_size(0) + gid, x);
#else
        acc += LOADV(gid * VPT + w, x);
#endif
    }
    scratch[lid] = HSUM(acc);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = WG / 2; stride > 0; stride >>= 1) {
        if (lid < stride)
            scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
