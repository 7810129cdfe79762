// layernorm: y[r, c] = (x[r, c] - mean_r) * rsqrt(var_r + eps) * gamma[c] + beta[c], row by row.
//
// Slots:
//   THREADS_PER_ROW, ROWS_PER_BLOCK, VECTOR_WIDTH   as in softmax
//   REDUCTION   WARP: __shfl_xor_sync butterflies (THREADS_PER_ROW <= 32); BLOCK: shared-memory tree
//   ALGORITHM   how a row's mean and variance are found:
//     TWO_PASS     mean first, then the sum of squared deviations: 3 reads of the row, 2 reductions
//     WELFORD      one pass of Welford updates per lane, merged with Chan's formula: 2 reads, 1 reduction
//     SUM_SQUARES  one pass of sum and sum of squares, var = E[x^2] - mean^2: 2 reads, cheapest
//                  arithmetic, loses digits when |mean| is large against the spread
// Problem: PROBLEM_ROWS x PROBLEM_COLS floats, PROBLEM_EPS.

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

struct Welford {
    float n, mean, m2;
};

__device__ __forceinline__ float shfl(float v, int offset) { return __shfl_xor_sync(0xffffffffu, v, offset, TPR); }
__device__ __forceinline__ float2 shfl(float2 v, int offset) { return make_float2(shfl(v.x, offset), shfl(v.y, offset)); }
__device__ __forceinline__ Welford shfl(Welford v, int offset) {
    Welford w = {shfl(v.n, offset), shfl(v.mean, offset), shfl(v.m2, offset)};
    return w;
}

__device__ __forceinline__ float merge(float a, float b) { return a + b; }
__device__ __forceinline__ float2 merge(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ Welford merge(Welford a, Welford b) {  // Chan et al.
    if (b.n == 0.0f) return a;
    if (a.n == 0.0f) return b;
    Welford r;
    r.n = a.n + b.n;
    const float delta = b.mean - a.mean;
    const float wb = b.n / r.n;
    r.mean = fmaf(delta, wb, a.mean);
    r.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
    return r;
}

#if REDUCTION == REDUCTION_WARP
template <typename T>
__device__ __forceinline__ T row_reduce(T v, T*) {
#pragma unroll
    for (int offset = TPR / 2; offset > 0; offset >>= 1) v = merge(v, shfl(v, offset));
    return v;
}
#else
template <typename T>
__device__ __forceinline__ T row_reduce(T v, T* buf) {  // called by every thread: uniform barriers
    const int lane = threadIdx.x % TPR;
    buf[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int stride = TPR / 2; stride > 0; stride >>= 1) {
        if (lane < stride) buf[threadIdx.x] = merge(buf[threadIdx.x], buf[threadIdx.x + stride]);
        __syncthreads();
    }
    v = buf[threadIdx.x - lane];
    __syncthreads();  // buf is reused by the next reduction
    return v;
}
#endif

#if ALGORITHM == ALGORITHM_WELFORD
typedef Welford stat_t;
#elif ALGORITHM == ALGORITHM_SUM_SQUARES
typedef float2 stat_t;
#else
typedef float stat_t;
#endif

extern "C" __global__ void __launch_bounds__(TPR * RPB)
layernorm(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
          float* __restrict__ y)
{
#if REDUCTION == REDUCTION_BLOCK
    __shared__ stat_t buf[TPR * RPB];
#else
    stat_t* buf = nullptr;
#endif
    const int lane = threadIdx.x % TPR;
    const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
    const bool valid = row < PROBLEM_ROWS;  // out-of-range rows still join the reductions
    const vec_t* xr = reinterpret_cast<const vec_t*>(x) + (valid ? row : 0) * COLS_VEC;
    const vec_t* gv = reinterpret_cast<const vec_t*>(gamma);
    const vec_t* bv = reinterpret_cast<const vec_t*>(beta);
    vec_t* yr = reinterpret_cast<vec_t*>(y) + (valid ? row : 0) * COLS_VEC;
    const float inv_cols = 1.0f / PROBLEM_COLS;

    float mean, var;
#if ALGORITHM == ALGORITHM_WELFORD
    Welford w = {0.0f, 0.0f, 0.0f};
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) {
                w.n += 1.0f;
                const float delta = v.f[c] - w.mean;
                w.mean += delta / w.n;
                w.m2 = fmaf(delta, v.f[c] - w.mean, w.m2);
            }
        }
    }
    w = row_reduce(w, buf);
    mean = w.mean;
    var = w.m2 * inv_cols;
#elif ALGORITHM == ALGORITHM_SUM_SQUARES
    float2 acc = make_float2(0.0f, 0.0f);
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) {
                acc.x += v.f[c];
                acc.y = fmaf(v.f[c], v.f[c], acc.y);
            }
        }
    }
    acc = row_reduce(acc, buf);
    mean = acc.x * inv_cols;
    var = fmaxf(fmaf(-mean, mean, acc.y * inv_cols), 0.0f);
#else
    float sum = 0.0f;
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) sum += v.f[c];
        }
    }
    mean = row_reduce(sum, buf) * inv_cols;
    float sq = 0.0f;
    if (valid) {
        for (int j = lane; j < COLS_VEC; j += TPR) {
            Vec v;
            v.v = xr[j];
#pragma unroll
            for (int c = 0; c < VECTOR_WIDTH; ++c) {
                const float d = v.f[c] - mean;
                sq = fmaf(d, d, sq);
            }
        }
    }
    var = row_reduce(sq, buf) * inv_cols;
#endif
    if (!valid) return;
    const float rstd = rsqrtf(var + (float)PROBLEM_EPS);
    for (int j = lane; j < COLS_VEC; j += TPR) {
        Vec v, g, b;
        v.v = xr[j];
        g.v = gv[j];
        b.v = bv[j];
#pragma unroll
        for (int c = 0; c < VECTOR_WIDTH; ++c) v.f[c] = fmaf((v.f[c] - mean) * rstd, g.f[c], b.f[c]);
        yr[j] = v.v;
    }
}
