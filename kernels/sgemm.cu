// Single-precision GEMM C = A * B (row-major A: M x K, B: K x N, C: M x N), plain FP32 FMAs,
// no tensor cores. A register-blocked kernel in the style of the well-known "2D block tiling +
// vectorised loads" SGEMM: a block computes a BLOCK_M x BLOCK_N tile of C, walking K in steps of
// BLOCK_K through shared memory; each thread accumulates a THREAD_M x THREAD_N sub-tile in
// registers from THREAD_M + THREAD_N shared-memory loads per k (outer products).
//
// Slots (rendered as #defines by the template library):
//   BLOCK_M, BLOCK_N, BLOCK_K   block tile of C and depth of one shared-memory stage
//   THREAD_M, THREAD_N          register tile of one thread
//   VECTOR_LOADS  1: float4 global loads of A/B tiles, float4 shared reads and float4 C stores
//   DOUBLE_BUFFER 1: two shared stages; the next tile is loaded while the current one is used,
//                 one __syncthreads per k step instead of two
//   UNROLL_K      unroll factor of the inner k loop over the shared stage
// Problem: PROBLEM_M, PROBLEM_N, PROBLEM_K; restrictions make M, N, K multiples of the block tile,
// so there is no bounds checking in the inner loops.

#define THREADS ((BLOCK_M / THREAD_M) * (BLOCK_N / THREAD_N))
#define STAGES (DOUBLE_BUFFER ? 2 : 1)
#if VECTOR_LOADS
#define VW 4
#else
#define VW 1
#endif

#if VECTOR_LOADS
typedef float4 vec_t;
#else
typedef float vec_t;
#endif
#define LOADS_A (BLOCK_M * BLOCK_K / VW / THREADS)  // vectors of A each thread moves per stage
#define LOADS_B (BLOCK_K * BLOCK_N / VW / THREADS)

// Registers in flight between the global load of a stage and its store to shared memory.
struct Staging {
    vec_t a[LOADS_A];
    vec_t b[LOADS_B];
};

// Global -> registers: the BLOCK_M x BLOCK_K tile of A and the BLOCK_K x BLOCK_N tile of B at k0.
__device__ __forceinline__ void fetch_tiles(const float* __restrict__ A, const float* __restrict__ B,
                                            Staging& st, int k0, int tid)
{
    const int K = PROBLEM_K;
    const int N = PROBLEM_N;
#pragma unroll
    for (int l = 0; l < LOADS_A; ++l) {
        const int i = tid + l * THREADS;
        const int r = i / (BLOCK_K / VW);
        const int c = (i % (BLOCK_K / VW)) * VW;
        st.a[l] = *reinterpret_cast<const vec_t*>(A + (size_t)r * K + k0 + c);
    }
#pragma unroll
    for (int l = 0; l < LOADS_B; ++l) {
        const int i = tid + l * THREADS;
        const int r = i / (BLOCK_N / VW);
        const int c = (i % (BLOCK_N / VW)) * VW;
        st.b[l] = *reinterpret_cast<const vec_t*>(B + (size_t)(k0 + r) * N + c);
    }
}

// Registers -> shared stage: A transposed into As[k][m] (a thread's THREAD_M values for one k are
// then contiguous), B as is.
__device__ __forceinline__ void store_tiles(const Staging& st, float (*As)[BLOCK_M], float (*Bs)[BLOCK_N], int tid)
{
#pragma unroll
    for (int l = 0; l < LOADS_A; ++l) {
        const int i = tid + l * THREADS;
        const int r = i / (BLOCK_K / VW);
        const int c = (i % (BLOCK_K / VW)) * VW;
#if VECTOR_LOADS
        As[c + 0][r] = st.a[l].x;
        As[c + 1][r] = st.a[l].y;
        As[c + 2][r] = st.a[l].z;
        As[c + 3][r] = st.a[l].w;
#else
        As[c][r] = st.a[l];
#endif
    }
#pragma unroll
    for (int l = 0; l < LOADS_B; ++l) {
        const int i = tid + l * THREADS;
        const int r = i / (BLOCK_N / VW);
        const int c = (i % (BLOCK_N / VW)) * VW;
        *reinterpret_cast<vec_t*>(&Bs[r][c]) = st.b[l];
    }
}

// acc += As[:, rows of this thread] x Bs[:, cols of this thread] over the BLOCK_K depth of a stage.
__device__ __forceinline__ void multiply_stage(const float (*As)[BLOCK_M], const float (*Bs)[BLOCK_N],
                                               float (&acc)[THREAD_M][THREAD_N], int trow, int tcol)
{
    float reg_m[THREAD_M];
    float reg_n[THREAD_N];
    // Explicit unroll by UNROLL_K: an outer loop kept rolled around an unrolled body.
#pragma unroll 1
    for (int k0 = 0; k0 < BLOCK_K; k0 += UNROLL_K) {
#pragma unroll
    for (int u = 0; u < UNROLL_K; ++u) {
        const int k = k0 + u;
#if VECTOR_LOADS
#pragma unroll
        for (int i = 0; i < THREAD_M; i += 4)
            *reinterpret_cast<float4*>(&reg_m[i]) = *reinterpret_cast<const float4*>(&As[k][trow * THREAD_M + i]);
#pragma unroll
        for (int j = 0; j < THREAD_N; j += 4)
            *reinterpret_cast<float4*>(&reg_n[j]) = *reinterpret_cast<const float4*>(&Bs[k][tcol * THREAD_N + j]);
#else
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) reg_m[i] = As[k][trow * THREAD_M + i];
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) reg_n[j] = Bs[k][tcol * THREAD_N + j];
#endif
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
            for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(reg_m[i], reg_n[j], acc[i][j]);
    }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)
{
    const int N = PROBLEM_N;
    const int K = PROBLEM_K;
    __shared__ __align__(16) float As[STAGES][BLOCK_K][BLOCK_M];
    __shared__ __align__(16) float Bs[STAGES][BLOCK_K][BLOCK_N];

    const int tid = threadIdx.x;
    const int trow = tid / (BLOCK_N / THREAD_N);
    const int tcol = tid % (BLOCK_N / THREAD_N);
    A += (size_t)blockIdx.y * BLOCK_M * K;
    B += (size_t)blockIdx.x * BLOCK_N;
    C += (size_t)blockIdx.y * BLOCK_M * N + (size_t)blockIdx.x * BLOCK_N;

    float acc[THREAD_M][THREAD_N];
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) acc[i][j] = 0.0f;

    const int steps = K / BLOCK_K;
    Staging st;
#if DOUBLE_BUFFER
    fetch_tiles(A, B, st, 0, tid);
    store_tiles(st, As[0], Bs[0], tid);
    __syncthreads();
    for (int s = 0; s < steps; ++s) {
        const int cur = s & 1;
        // Loads of the next stage are in flight in registers while this stage is multiplied;
        // the other buffer was last read in step s-1, which ended with a barrier: safe to refill.
        if (s + 1 < steps) fetch_tiles(A, B, st, (s + 1) * BLOCK_K, tid);
        multiply_stage(As[cur], Bs[cur], acc, trow, tcol);
        if (s + 1 < steps) store_tiles(st, As[cur ^ 1], Bs[cur ^ 1], tid);
        __syncthreads();
    }
#else
    for (int s = 0; s < steps; ++s) {
        fetch_tiles(A, B, st, s * BLOCK_K, tid);
        store_tiles(st, As[0], Bs[0], tid);
        __syncthreads();
        multiply_stage(As[0], Bs[0], acc, trow, tcol);
        __syncthreads();
    }
#endif

#pragma unroll
    for (int i = 0; i < THREAD_M; ++i) {
        float* row = C + (size_t)(trow * THREAD_M + i) * N + tcol * THREAD_N;
#if VECTOR_LOADS
#pragma unroll
        for (int j = 0; j < THREAD_N; j += 4)
            *reinterpret_cast<float4*>(row + j) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
#else
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) row[j] = acc[i][j];
#endif
    }
}
