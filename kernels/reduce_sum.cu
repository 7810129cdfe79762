// reduce_sum: out[0] = sum of PROBLEM_N floats, in ONE launch whatever the strategy.
//
// Slots:
//   BLOCK_SIZE        threads per block
//   ITEMS_PER_THREAD  vectors each thread accumulates (block-strided, so every load is coalesced)
//   VECTOR_WIDTH      floats per load: 1 (float), 2 (float2) or 4 (float4)
//   UNROLL            loads issued back to back into UNROLL independent accumulators
//   STRATEGY          how the per-thread sums meet:
//     ATOMIC        every thread atomicAdds its sum to out[0]
//     SHARED_TREE   a __syncthreads() tree in shared memory per block, one atomicAdd per block
//     WARP_SHUFFLE  __shfl_down_sync inside warps, warp sums through shared memory, one atomicAdd per block
//     TWO_PASS      block sums to partials[], __threadfence + atomic ticket; the last block to finish
//                   adds the partials in a fixed order and stores out[0] (deterministic, no float atomics)
// Arguments: x (in), out (1 float, zeroed before the launch), partials (scratch, one float per block),
// ticket (1 uint, zeroed before the first launch and re-armed by the last block).

#if VECTOR_WIDTH == 4
typedef float4 vec_t;
__device__ __forceinline__ float vsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
#elif VECTOR_WIDTH == 2
typedef float2 vec_t;
__device__ __forceinline__ float vsum(float2 v) { return v.x + v.y; }
#else
typedef float vec_t;
__device__ __forceinline__ float vsum(float v) { return v; }
#endif

#define N_VEC (PROBLEM_N / VECTOR_WIDTH)
#define CHUNK (BLOCK_SIZE * ITEMS_PER_THREAD)
#define WARPS (BLOCK_SIZE / 32)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Block sum by shuffles; the result is valid in thread 0.
__device__ __forceinline__ float block_sum_shuffle(float v, float* warp_sums) {
    v = warp_sum(v);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = (threadIdx.x < WARPS) ? warp_sums[threadIdx.x] : 0.0f;
    if (warp == 0) v = warp_sum(v);
    return v;
}

// Block sum by a shared-memory tree (sequential addressing: conflict-free); valid in thread 0.
__device__ __forceinline__ float block_sum_tree(float v, float* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int stride = BLOCK_SIZE / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
        __syncthreads();
    }
    return buf[0];
}

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
reduce_sum(const float* __restrict__ x, float* __restrict__ out, float* __restrict__ partials,
           unsigned int* __restrict__ ticket)
{
    const vec_t* xv = reinterpret_cast<const vec_t*>(x);
    const long long base = (long long)blockIdx.x * CHUNK + threadIdx.x;

    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0f;
#pragma unroll 1
    for (int k0 = 0; k0 < ITEMS_PER_THREAD; k0 += UNROLL) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + (long long)(k0 + u) * BLOCK_SIZE;
            if (i < N_VEC) acc[u] += vsum(xv[i]);
        }
    }
#if PROBLEM_N % VECTOR_WIDTH != 0  // without a tail, "threadIdx.x < 0" is nvcc warning #186
    const int tail = PROBLEM_N - N_VEC * VECTOR_WIDTH;
    if (blockIdx.x == 0 && threadIdx.x < tail) acc[0] += x[(long long)N_VEC * VECTOR_WIDTH + threadIdx.x];
#endif
    float sum = acc[0];
#pragma unroll
    for (int u = 1; u < UNROLL; ++u) sum += acc[u];

#if STRATEGY == STRATEGY_ATOMIC
    atomicAdd(out, sum);
#elif STRATEGY == STRATEGY_SHARED_TREE
    __shared__ float buf[BLOCK_SIZE];
    sum = block_sum_tree(sum, buf);
    if (threadIdx.x == 0) atomicAdd(out, sum);
#elif STRATEGY == STRATEGY_WARP_SHUFFLE
    __shared__ float warp_sums[WARPS];
    sum = block_sum_shuffle(sum, warp_sums);
    if (threadIdx.x == 0) atomicAdd(out, sum);
#elif STRATEGY == STRATEGY_TWO_PASS
    __shared__ float warp_sums[WARPS];
    __shared__ bool last_block;
    sum = block_sum_shuffle(sum, warp_sums);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = sum;
        __threadfence();  // make the partial visible before taking a ticket
        last_block = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last_block) {
        float total = 0.0f;
        for (int i = threadIdx.x; i < gridDim.x; i += BLOCK_SIZE) total += __ldcg(&partials[i]);
        total = block_sum_shuffle(total, warp_sums);
        if (threadIdx.x == 0) {
            out[0] = total;
            *ticket = 0u;  // re-arm for the next launch
        }
    }
#else
#error "unknown STRATEGY"
#endif
}
