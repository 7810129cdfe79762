// Matrix transpose y = x^T of a rows x cols float32 matrix (row-major in, row-major out).
//
// Slots (rendered as #defines by the template library):
//   TILE_DIM        square tile of the matrix one block moves (16/32/64)
//   BLOCK_ROWS      threads along y; each thread walks TILE_DIM / BLOCK_ROWS rows of the tile
//   TILES_PER_BLOCK consecutive tiles down the rows that one block moves (amortises index math)
//   VECTOR_WIDTH    elements per global access (1 = float, 2 = float2, 4 = float4)
//   USE_SHARED      1: stage the tile in shared memory so both the read and the write are
//                   coalesced; 0: read rows coalesced and write columns strided (naive)
//   SMEM_PADDING    1: one extra column in the shared tile, so reading a tile column hits
//                   distinct banks (only meaningful with USE_SHARED)
//   READ_ONLY       1: load x through the read-only data cache (__ldg)
// Problem: PROBLEM_ROWS, PROBLEM_COLS. cols and rows are multiples of VECTOR_WIDTH (restriction),
// so a vector is either entirely inside the matrix or entirely outside it.

#if VECTOR_WIDTH == 4
typedef float4 vec_t;
#elif VECTOR_WIDTH == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

#define THREADS_X (TILE_DIM / VECTOR_WIDTH)

#if READ_ONLY
#define LOAD_VEC(ptr) __ldg(ptr)
#else
#define LOAD_VEC(ptr) (*(ptr))
#endif

// Element k of a vector, by value and by reference (k is a compile-time constant after unrolling).
__device__ __forceinline__ float vget(const vec_t& v, int k) {
    return reinterpret_cast<const float*>(&v)[k];
}
__device__ __forceinline__ float& vref(vec_t& v, int k) {
    return reinterpret_cast<float*>(&v)[k];
}

extern "C" __global__ void __launch_bounds__(THREADS_X * BLOCK_ROWS)
transpose(const float* x, float* __restrict__ y)
{
    const int rows = PROBLEM_ROWS;
    const int cols = PROBLEM_COLS;
    const int tx = threadIdx.x;  // vector index inside a tile row
    const int ty = threadIdx.y;
    const int col0 = blockIdx.x * TILE_DIM;  // first column of x in this block's tiles

#if USE_SHARED
    __shared__ float tile[TILE_DIM][TILE_DIM + SMEM_PADDING];
#endif

    for (int t = 0; t < TILES_PER_BLOCK; ++t) {
        const int row0 = (blockIdx.y * TILES_PER_BLOCK + t) * TILE_DIM;  // first row of x
        if (row0 >= rows) break;  // uniform over the block: safe with __syncthreads below
#if USE_SHARED
        // Coalesced read of tile rows into shared memory.
#pragma unroll
        for (int i0 = 0; i0 < TILE_DIM; i0 += BLOCK_ROWS) {
            const int i = i0 + ty;
            const int r = row0 + i;
            const int c = col0 + tx * VECTOR_WIDTH;
            if (r < rows && c < cols) {
                const vec_t v = LOAD_VEC(reinterpret_cast<const vec_t*>(x + (size_t)r * cols + c));
#pragma unroll
                for (int k = 0; k < VECTOR_WIDTH; ++k) tile[i][tx * VECTOR_WIDTH + k] = vget(v, k);
            }
        }
        __syncthreads();
        // Coalesced write of tile columns (they are rows of y).
#pragma unroll
        for (int i0 = 0; i0 < TILE_DIM; i0 += BLOCK_ROWS) {
            const int i = i0 + ty;
            const int r = col0 + i;                     // row of y = column of x
            const int c = row0 + tx * VECTOR_WIDTH;     // column of y = row of x
            if (r < cols && c < rows) {
                vec_t v;
#pragma unroll
                for (int k = 0; k < VECTOR_WIDTH; ++k) vref(v, k) = tile[tx * VECTOR_WIDTH + k][i];
                *reinterpret_cast<vec_t*>(y + (size_t)r * rows + c) = v;
            }
        }
        __syncthreads();  // the tile is reused by the next t
#else
        // Naive: each thread reads a vector along a row of x and writes it down a column of y.
#pragma unroll
        for (int i0 = 0; i0 < TILE_DIM; i0 += BLOCK_ROWS) {
            const int i = i0 + ty;
            const int r = row0 + i;
            const int c = col0 + tx * VECTOR_WIDTH;
            if (r < rows && c < cols) {
                const vec_t v = LOAD_VEC(reinterpret_cast<const vec_t*>(x + (size_t)r * cols + c));
#pragma unroll
                for (int k = 0; k < VECTOR_WIDTH; ++k) y[(size_t)(c + k) * rows + r] = vget(v, k);
            }
        }
#endif
    }
}
