// Histogram of n uint32 items with values in [0, bins): hist[v] += 1 for every item v.
// hist is zeroed before the launch (reset "zero"); the kernel only adds.
//
// Slots (rendered as #defines by the template library):
//   STRATEGY          GLOBAL_ATOMIC: one global atomicAdd per item;
//                     SHARED_PRIVATE: each block counts into private sub-histograms in shared
//                     memory, then merges them into hist with one global atomic per non-empty bin
//   BLOCK_SIZE        threads per block
//   ITEMS_PER_THREAD  items each thread counts (blocks = n / (BLOCK_SIZE * ITEMS_PER_THREAD))
//   VECTOR_WIDTH      items per global load (1: uint32, 4: uint4); a warp's loads stay contiguous
//   COPIES            sub-histograms per block (SHARED_PRIVATE): lane l counts into copy l % COPIES,
//                     so lanes of a warp that see the same value hit different addresses
// Problem: PROBLEM_N (items), PROBLEM_BINS.

#define N_ITEMS PROBLEM_N
#define BINS PROBLEM_BINS
#define CHUNK (BLOCK_SIZE * ITEMS_PER_THREAD)  // items per block
// One padding word per copy so that equal bins of different copies fall in different banks.
#define COPY_STRIDE (BINS + 1)

#if VECTOR_WIDTH == 4
typedef uint4 vec_t;
#else
typedef unsigned int vec_t;
#endif

__device__ __forceinline__ unsigned int velem(const vec_t& v, int k) {
    return reinterpret_cast<const unsigned int*>(&v)[k];
}

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
histogram(const unsigned int* __restrict__ data, unsigned int* __restrict__ hist)
{
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * CHUNK;

#if STRATEGY == STRATEGY_SHARED_PRIVATE
    __shared__ unsigned int sh_hist[COPIES * COPY_STRIDE];
    for (int b = tid; b < COPIES * COPY_STRIDE; b += BLOCK_SIZE) sh_hist[b] = 0;
    __syncthreads();
    unsigned int* mine = sh_hist + (tid % 32 % COPIES) * COPY_STRIDE;
#define COUNT(value) atomicAdd(mine + (value), 1u)
#else
#define COUNT(value) atomicAdd(hist + (value), 1u)
#endif

    // Vector i of this thread starts at base + (i * BLOCK_SIZE + tid) * VECTOR_WIDTH: consecutive
    // threads read consecutive vectors (coalesced) and the block's chunk is contiguous.
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD / VECTOR_WIDTH; ++i) {
        const size_t at = base + ((size_t)i * BLOCK_SIZE + tid) * VECTOR_WIDTH;
        if (at + VECTOR_WIDTH <= N_ITEMS) {
            const vec_t v = *reinterpret_cast<const vec_t*>(data + at);
#pragma unroll
            for (int k = 0; k < VECTOR_WIDTH; ++k) COUNT(velem(v, k));
        } else {
            for (size_t j = at; j < N_ITEMS && j < at + VECTOR_WIDTH; ++j) COUNT(data[j]);
        }
    }

#if STRATEGY == STRATEGY_SHARED_PRIVATE
    __syncthreads();
    for (int b = tid; b < BINS; b += BLOCK_SIZE) {
        unsigned int total = 0;
#pragma unroll
        for (int c = 0; c < COPIES; ++c) total += sh_hist[c * COPY_STRIDE + b];
        if (total) atomicAdd(hist + b, total);
    }
#endif
}
