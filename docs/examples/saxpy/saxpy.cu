// SAXPY written from scratch: out = a * x + y over n floats.
// Slots: BLOCK_SIZE threads per block, ITEMS elements per thread. Problem: PROBLEM_N elements.
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE)
saxpy(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a)
{
    const long long base = (long long)blockIdx.x * BLOCK_SIZE * ITEMS + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const long long i = base + (long long)k * BLOCK_SIZE;  // block-strided: coalesced for every k
        if (i < PROBLEM_N) out[i] = a * x[i] + y[i];
    }
}
