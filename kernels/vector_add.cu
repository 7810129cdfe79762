// vector_add: z = alpha * x + y (saxpy into a separate output), float32.
//
// Slots (rendered as #define lines in front of this file):
//   BLOCK_SIZE        threads per block
//   ITEMS_PER_THREAD  vectors each thread loads before it computes (memory-level parallelism)
//   VECTOR_WIDTH      floats per load/store: 1 (float), 2 (float2) or 4 (float4)
//   GRID_STRIDE       0: one-shot, the grid covers the problem exactly once
//                     1: a fixed grid of GRID_BLOCKS blocks loops over the problem
//   GRID_BLOCKS       blocks launched in grid-stride mode
// Problem: PROBLEM_N elements.

#if VECTOR_WIDTH == 4
typedef float4 vec_t;
#elif VECTOR_WIDTH == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ float axpy(float a, float x, float y) { return fmaf(a, x, y); }
__device__ __forceinline__ float2 axpy(float a, float2 x, float2 y) {
    return make_float2(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y));
}
__device__ __forceinline__ float4 axpy(float a, float4 x, float4 y) {
    return make_float4(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y), fmaf(a, x.z, y.z), fmaf(a, x.w, y.w));
}

#define N_VEC (PROBLEM_N / VECTOR_WIDTH)
#define CHUNK (BLOCK_SIZE * ITEMS_PER_THREAD)

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
vector_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z, float alpha)
{
    const vec_t* xv = reinterpret_cast<const vec_t*>(x);
    const vec_t* yv = reinterpret_cast<const vec_t*>(y);
    vec_t* zv = reinterpret_cast<vec_t*>(z);

#if GRID_STRIDE
    for (long long base = (long long)blockIdx.x * CHUNK + threadIdx.x; base < N_VEC;
         base += (long long)gridDim.x * CHUNK)
#else
    const long long base = (long long)blockIdx.x * CHUNK + threadIdx.x;
#endif
    {
        vec_t xr[ITEMS_PER_THREAD], yr[ITEMS_PER_THREAD];
        // All loads first, so ITEMS_PER_THREAD independent requests are in flight per thread.
#pragma unroll
        for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
            const long long i = base + (long long)k * BLOCK_SIZE;  // block-strided: coalesced per k
            if (i < N_VEC) {
                xr[k] = xv[i];
                yr[k] = yv[i];
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
            const long long i = base + (long long)k * BLOCK_SIZE;
            if (i < N_VEC) zv[i] = axpy(alpha, xr[k], yr[k]);
        }
    }

    // The PROBLEM_N % VECTOR_WIDTH trailing elements, one per thread of the first block.
#if PROBLEM_N % VECTOR_WIDTH != 0  // without a tail, "threadIdx.x < 0" is nvcc warning #186
    const int tail = PROBLEM_N - N_VEC * VECTOR_WIDTH;
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const long long i = (long long)N_VEC * VECTOR_WIDTH + threadIdx.x;
        z[i] = axpy(alpha, x[i], y[i]);
    }
#endif
}
