// C = A * B for row-major M x K (A) and K x N (B), A given transposed (AT, K x M).
// CLBlast-style tiling, every knob a -D define:
//   MWG, NWG, KWG  work-group tile of C (rows, columns) and of the K loop
//   MDIMC, NDIMC   work-items per work-group along M (dimension 1) and N (dimension 0)
//   VWM, VWN       vector widths of the loads of A (along M) and of B and C (along N)
//   KWI            unroll factor of the innermost K loop
//   SA, SB         stage the tiles of A / B in local memory (1) or read them from global memory (0)
//   STRM, STRN     which rows / columns of the work-group tile a work-item owns: 1 = strided (neighbouring
//                  work-items touch neighbouring vectors, as GPUs like), 0 = one contiguous block each
// Each work-item computes an (MWG/MDIMC) x (NWG/NDIMC) block of C.

#define MWI (MWG / MDIMC)
#define NWI (NWG / NDIMC)
#define MWV (MWI / VWM)
#define NWV (NWI / VWN)

// Offset inside the work-group tile of the v-th vector owned by work-item t.
#if STRM
#define OFFSET_M(v, t) (((v) * MDIMC + (t)) * VWM)
#else
#define OFFSET_M(v, t) (((t) * MWV + (v)) * VWM)
#endif
#if STRN
#define OFFSET_N(v, t) (((v) * NDIMC + (t)) * VWN)
#else
#define OFFSET_N(v, t) (((t) * NWV + (v)) * VWN)
#endif

#if VWN == 1
typedef float realN;
#define LOADN(p) (*(p))
#define STOREN(v, p) (*(p) = (v))
#elif VWN == 2
typedef float2 realN;
#define LOADN(p) vload2(0, (p))
#define STOREN(v, p) vstore2((v), 0, (p))
#elif VWN == 4
typedef float4 realN;
#define LOADN(p) vload4(0, (p))
#define STOREN(v, p) vstore4((v), 0, (p))
#elif VWN == 8
typedef float8 realN;
#define LOADN(p) vload8(0, (p))
#define STOREN(v, p) vstore8((v), 0, (p))
#endif

#if VWM == 1
#define LOADM_INTO(dst, p) ((dst)[0] = *(p))
#elif VWM == 2
#define LOADM_INTO(dst, p) vstore2(vload2(0, (p)), 0, (dst))
#elif VWM == 4
#define LOADM_INTO(dst, p) vstore4(vload4(0, (p)), 0, (dst))
#elif VWM == 8
#define LOADM_INTO(dst, p) vstore8(vload8(0, (p)), 0, (dst))
#endif

__kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1)))
void gemm(const int M, const int N, const int K,
          __global const float* restrict AT,
          __global const float* restrict B,
          __global float* restrict C)
{
    const int tn = get_local_id(0);
    const int tm = get_local_id(1);
    const int gn = get_group_id(0) * NWG;
    const int gm = get_group_id(1) * MWG;

#if SA
    __local float Alm[KWG * MWG];
#endif
#if SB
    __local float Blm[KWG * NWG];
#endif

    realN acc[MWI][NWV];
    for (int mi = 0; mi < MWI; ++mi)
        for (int nv = 0; nv < NWV; ++nv)
            acc[mi][nv] = (realN)(0.0f);

    for (int k0 = 0; k0 < K; k0 += KWG) {
#if SA || SB
        const int tid = tm * NDIMC + tn;
#endif
#if SA
        for (int idx = tid; idx < KWG * MWG; idx += MDIMC * NDIMC)
            Alm[idx] = AT[(k0 + idx / MWG) * M + gm + idx % MWG];
#endif
#if SB
        for (int idx = tid; idx < KWG * NWG; idx += MDIMC * NDIMC)
            Blm[idx] = B[(k0 + idx / NWG) * N + gn + idx % NWG];
#endif
#if SA || SB
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        for (int kw = 0; kw < KWG; kw += KWI) {
#pragma unroll
            for (int ku = 0; ku < KWI; ++ku) {
                const int k = kw + ku;
                float a[MWI];
                for (int mv = 0; mv < MWV; ++mv) {
                    const int m = OFFSET_M(mv, tm);
#if SA
                    LOADM_INTO(&a[mv * VWM], &Alm[k * MWG + m]);
#else
                    LOADM_INTO(&a[mv * VWM], &AT[(k0 + k) * M + gm + m]);
#endif
                }
                realN b[NWV];
                for (int nv = 0; nv < NWV; ++nv) {
                    const int n = OFFSET_N(nv, tn);
#if SB
                    b[nv] = LOADN(&Blm[k * NWG + n]);
#else
                    b[nv] = LOADN(&B[(k0 + k) * N + gn + n]);
#endif
                }
                for (int mi = 0; mi < MWI; ++mi)
                    for (int nv = 0; nv < NWV; ++nv)
                        acc[mi][nv] += a[mi] * b[nv];
            }
        }
#if SA || SB
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
    }

    for (int mv = 0; mv < MWV; ++mv)
        for (int w = 0; w < VWM; ++w) {
            const int mi = mv * VWM + w;
            const int m = gm + OFFSET_M(mv, tm) + w;
            for (int nv = 0; nv < NWV; ++nv)
                STOREN(acc[mi][nv], &C[m * N + gn + OFFSET_N(nv, tn)]);
        }
}
