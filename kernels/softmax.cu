// softmax: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)) for each of PROBLEM_ROWS rows.
//
// Slots:
//   THREADS_PER_ROW  threads that share one row (lanes)
//   ROWS_PER_BLOCK   rows one block handles side by side (block = THREADS_PER_ROW * ROWS_PER_BLOCK)
//   VECTOR_WIDTH     floats per load/store: 1, 2 or 4
//   REDUCTION        how the lanes of a row combine:
//     WARP   __shfl_xor_sync butterflies inside (a segment of) one warp; THREADS_PER_ROW <= 32
//     BLOCK  a __syncthreads() tree in shared memory over the row's lanes
//   ONLINE           0: three passes over the row (max, sum of exp, write)
//                    1: one pass keeps a running (max, sum) pair, rescaling the sum when the max
//                       grows, then the write pass (two reads of x instead of three)
// Problem: PROBLEM_ROWS x PROBLEM_COLS floats, row-major; PROBLEM_COLS % VECTOR_WIDTH == 0.

#define NEG_INF __int_as_float(0xff800000)  // -inf (NVRTC has no <math.h> INFINITY)
#define TPR THREADS_PER_ROW
#define RPB ROWS_PER_BLOCK
#define COLS_VEC (PROBLEM_COLS / VECTOR_WIDTH)

#if VECTOR_WIDTH == 4
typedef float4 vec_t;
#elif VECTOR_WIDTH == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

union Vec {
    vec_t v;
    float f[VECTOR_WIDTH];
};

struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Merge two (max, sum-of-exp relative to that max) pairs; an empty pair is (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mm = fmaxf(m, m2);
    const float a = (m == NEG_INF) ? 0.0f : s * expf(m - mm);
    const float b = (m2 == NEG_INF) ? 0.0f : s2 * expf(m2 - mm);
    m = mm;
    s = a + b;
}

#if REDUCTION == REDUCTION_WARP
template <typename Op>
__device__ __forceinline__ float row_reduce(float v, Op op, float*) {
#pragma unroll
    for (int offset = TPR / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset, TPR));
    return v;
}
__device__ __forceinline__ void row_reduce_pair(float& m, float& s, float*, float*) {
#pragma unroll
    for (int offset = TPR / 2; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset, TPR);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, offset, TPR);
        merge(m, s, m2, s2);
    }
}
#else
// Every thread of the block calls these (the row guard is outside), so the barriers are uniform.
template <typename Op>
__device__ __forceinline__ float row_reduce(float v, Op op, float* buf) {
    const int lane = threadIdx.x % TPR;
    buf[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int stride = TPR / 2; stride > 0; stride >>= 1) {
        if (lane < stride) buf[threadIdx.x] = op(buf[threadIdx.x], buf[threadIdx.x + stride]);
        __syncthreads();
    }
    v = buf[threadIdx.x - lane];
    __syncthreads();  // buf is reused by the next reduction
    return v;
}
__device__ __forceinline__ void row_reduce_pair(float& m, float& s, float* bm, float* bs) {
    const int lane = threadIdx.x % TPR;
    bm[threadIdx.x] = m;
    bs[threadIdx.x] = s;
    __syncthreads();
#pragma unroll
    for (int stride = TPR / 2; stride > 0; stride >>= 1) {
        if (lane < stride) {
            float mm = bm[threadIdx.x], ss = bs[threadIdx.x];
            merge(mm, ss, bm[threadIdx.x + stride], bs[threadIdx.x + stride]);
            bm[threadIdx.x] = mm;
            bs[threadIdx.x] = ss;
        }
        __syncthreads();
    }
    m = bm[threadIdx.x - lane];
    s = bs[threadIdx.x - lane];
}
#endif

extern "C" __global__ void __launch_bounds__(TPR * RPB)
softmax(const float* __restrict__ x, float* __restrict__ y)
{
#if REDUCTION == REDUCTION_BLOCK
    __shared__ float buf_a[TPR * RPB];
#if ONLINE
    __shared__ float buf_b[TPR * RPB];
#else
    float* buf_b = buf_a;
#endif
#else
    float* buf_a = nullptr;
    float* buf_b = nullptr;
#endif
    const int lane = threadIdx.x % TPR;
    const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
    const bool valid = row < PROBLEM_ROWS;  // out-of-range rows still join the reductions
    const vec_t* xr = reinterpret_cast<const vec_t*>(x) + (valid ? row : 0) * COLS_VEC;
    vec_t* yr = reinterpret_cast<vec_t*>(y) + (valid ? row : 0) * COLS_VEC;

    float m = NEG_INF;
    float s = 0.0f;
#if ONLINE
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
            float vmax = v.f[0];
#pragma unroll
            for (int c = 1; c < VECTOR_WIDTH; ++c) vmax = fmaxf(vmax, v.f[c]);
            if (vmax > m) {
                s = (m == NEG_INF) ? 0.0f : s * expf(m - vmax);
                m = vmax;
            }
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) s += expf(v.f[c] - m);
        }
    }
    row_reduce_pair(m, s, buf_a, buf_b);
#else
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) m = fmaxf(m, v.f[c]);
        }
    }
    m = row_reduce(m, MaxOp(), buf_a);
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) s += expf(v.f[c] - m);
        }
    }
    s = row_reduce(s, SumOp(), buf_b);
#endif
    if (!valid) return;
    const float inv = 1.0f / s;
    for (int j = lane; j < COLS_VEC; j += TPR) {
        Vec v;
        v.v = xr[j];
#pragma unroll
        for (int c = 0; c < VECTOR_WIDTH; ++c) v.f[c] = expf(v.f[c] - m) * inv;
        yr[j] = v.v;
    }
}
