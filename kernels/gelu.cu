// gelu: y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), the tanh form of GELU, float32.
//
// Slots:
//   BLOCK_SIZE, ITEMS_PER_THREAD, VECTOR_WIDTH, GRID_STRIDE, GRID_BLOCKS  as in vector_add
//   FAST_MATH  0: precise tanhf (a software sequence, ~2 ulp);
//              1: the hardware tanh.approx.f32 instruction (sm_75+; __expf/__fdividef before that),
//              one SFU op with a relative error near 2^-11: faster, about 3.5 digits instead of 7
// Problem: PROBLEM_N elements.

#if VECTOR_WIDTH == 4
typedef float4 vec_t;
#elif VECTOR_WIDTH == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ float tanh_fast(float u) {
#if __CUDA_ARCH__ >= 750
    float t;  // the SFU's tanh: one instruction, max relative error about 2^-11
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return t;
#else
    return 1.0f - __fdividef(2.0f, __expf(2.0f * u) + 1.0f);
#endif
}

__device__ __forceinline__ float gelu1(float x) {
    const float x3 = x * x * x;
    const float u = 0.7978845608028654f * fmaf(0.044715f, x3, x);
#if FAST_MATH
    return 0.5f * x * (1.0f + tanh_fast(u));
#else
    return 0.5f * x * (1.0f + tanhf(u));
#endif
}

__device__ __forceinline__ float gelu(float x) { return gelu1(x); }
__device__ __forceinline__ float2 gelu(float2 v) { return make_float2(gelu1(v.x), gelu1(v.y)); }
__device__ __forceinline__ float4 gelu(float4 v) {
    return make_float4(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w));
}

#define N_VEC (PROBLEM_N / VECTOR_WIDTH)
#define CHUNK (BLOCK_SIZE * ITEMS_PER_THREAD)

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
gelu_forward(const float* __restrict__ x, float* __restrict__ y)
{
    const vec_t* xv = reinterpret_cast<const vec_t*>(x);
    vec_t* yv = reinterpret_cast<vec_t*>(y);

#if GRID_STRIDE
    for (long long base = (long long)blockIdx.x * CHUNK + threadIdx.x; base < N_VEC;
         base += (long long)gridDim.x * CHUNK)
#else
    const long long base = (long long)blockIdx.x * CHUNK + threadIdx.x;
#endif
    {
        vec_t xr[ITEMS_PER_THREAD];
#pragma unroll
        for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
            const long long i = base + (long long)k * BLOCK_SIZE;
            if (i < N_VEC) xr[k] = xv[i];
        }
#pragma unroll
        for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
            const long long i = base + (long long)k * BLOCK_SIZE;
            if (i < N_VEC) yv[i] = gelu(xr[k]);
        }
    }

#if PROBLEM_N % VECTOR_WIDTH != 0  // without a tail, "threadIdx.x < 0" is nvcc warning #186
    const int tail = PROBLEM_N - N_VEC * VECTOR_WIDTH;
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const long long i = (long long)N_VEC * VECTOR_WIDTH + threadIdx.x;
        y[i] = gelu1(x[i]);
    }
#endif
}
