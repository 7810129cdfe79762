// 2D convolution (correlation, as in the classic Kernel Tuner benchmark) of a padded float32 image
// with a FILTER_HEIGHT x FILTER_WIDTH filter held in __constant__ memory:
//   output[y][x] = sum_{i,j} input[y + i][x + j] * d_filter[i][j]
// input is (image_height + filter_height - 1) x (image_width + filter_width - 1), output is
// image_height x image_width, both row-major.
//
// Slots (same names and domains as the Kernel Tuner convolution benchmark, as #defines):
//   BLOCK_SIZE_X, BLOCK_SIZE_Y  thread block shape
//   TILE_SIZE_X, TILE_SIZE_Y    outputs per thread in x and y (strided by the block size, so a
//                               warp's accesses stay contiguous)
//   READ_ONLY    1: global input loads through the read-only data cache (__ldg)
//   USE_PADDING  1: one extra column in the shared input tile (changes the bank mapping of the
//                rows of a warp that spans several tile rows)
//   USE_SHMEM    1: the block first stages its input tile with the halo in shared memory;
//                0: every tap is read from global memory (served by L1/L2)
// Problem: PROBLEM_IMAGE_WIDTH, PROBLEM_IMAGE_HEIGHT, PROBLEM_FILTER_WIDTH, PROBLEM_FILTER_HEIGHT.

#define FW PROBLEM_FILTER_WIDTH
#define FH PROBLEM_FILTER_HEIGHT
#define IMG_W PROBLEM_IMAGE_WIDTH
#define IMG_H PROBLEM_IMAGE_HEIGHT
#define IN_W (IMG_W + FW - 1)
#define IN_H (IMG_H + FH - 1)
#define TILE_W (BLOCK_SIZE_X * TILE_SIZE_X)  // outputs per block in x
#define TILE_H (BLOCK_SIZE_Y * TILE_SIZE_Y)
#define SH_W (TILE_W + FW - 1)  // input columns one block needs
#define SH_H (TILE_H + FH - 1)

#if READ_ONLY
#define LOAD(ptr) __ldg(ptr)
typedef const float* __restrict__ input_ptr;
#else
#define LOAD(ptr) (*(ptr))
typedef const float* input_ptr;  // no __restrict__: the compiler may not route loads via the RO cache
#endif

__constant__ float d_filter[FH * FW];

// Like the benchmark, every tap and tile loop is fully unrolled and there are no launch bounds: the
// compiler may reuse staged values across taps in registers, so large tiles cost registers (and
// compile time), and big blocks with big tiles can exceed the register file and fail to launch,
// as in the recording.
extern "C" __global__ void
convolution_kernel(float* __restrict__ output, input_ptr input)
{
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int x0 = blockIdx.x * TILE_W;  // first output column of the block
    const int y0 = blockIdx.y * TILE_H;

    float sum[TILE_SIZE_Y][TILE_SIZE_X];
#pragma unroll
    for (int yi = 0; yi < TILE_SIZE_Y; ++yi)
#pragma unroll
        for (int xi = 0; xi < TILE_SIZE_X; ++xi) sum[yi][xi] = 0.0f;

#if USE_SHMEM
    __shared__ float sh_input[SH_H][SH_W + USE_PADDING];
    for (int i = ty; i < SH_H; i += BLOCK_SIZE_Y) {
        for (int j = tx; j < SH_W; j += BLOCK_SIZE_X) {
            const int gy = y0 + i;
            const int gx = x0 + j;
            // Blocks on the right/bottom edge may overhang the input: stage zeros there
            // (they only feed outputs that are never stored).
            sh_input[i][j] = (gy < IN_H && gx < IN_W) ? LOAD(input + (size_t)gy * IN_W + gx) : 0.0f;
        }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < FH; ++i) {
#pragma unroll
        for (int j = 0; j < FW; ++j) {
            const float f = d_filter[i * FW + j];
#pragma unroll
            for (int yi = 0; yi < TILE_SIZE_Y; ++yi)
#pragma unroll
                for (int xi = 0; xi < TILE_SIZE_X; ++xi)
                    sum[yi][xi] += sh_input[ty + yi * BLOCK_SIZE_Y + i][tx + xi * BLOCK_SIZE_X + j] * f;
        }
    }
#else
    int row[TILE_SIZE_Y];
    int col[TILE_SIZE_X];
#if IMG_H % TILE_H == 0 && IMG_W % TILE_W == 0
    // The tiles cover the image exactly: every output exists, no edge handling. Rows yi * BLOCK_SIZE_Y + i
    // of different (yi, i) are then visibly the same address, so the compiler loads such an element
    // once and reuses it for every output of the tile that needs it.
#pragma unroll
    for (int yi = 0; yi < TILE_SIZE_Y; ++yi) row[yi] = y0 + ty + yi * BLOCK_SIZE_Y;
#pragma unroll
    for (int xi = 0; xi < TILE_SIZE_X; ++xi) col[xi] = x0 + tx + xi * BLOCK_SIZE_X;
#else
    // Clamp the coordinates of outputs beyond the image edge so every load stays inside the input
    // without a branch in the tap loop; those outputs are computed but not stored. The clamps hide
    // from the compiler that rows of different yi overlap: one load per tap.
#pragma unroll
    for (int yi = 0; yi < TILE_SIZE_Y; ++yi) row[yi] = min(y0 + ty + yi * BLOCK_SIZE_Y, IMG_H - 1);
#pragma unroll
    for (int xi = 0; xi < TILE_SIZE_X; ++xi) col[xi] = min(x0 + tx + xi * BLOCK_SIZE_X, IMG_W - 1);
#endif
#pragma unroll
    for (int i = 0; i < FH; ++i) {
#pragma unroll
        for (int j = 0; j < FW; ++j) {
            const float f = d_filter[i * FW + j];
#pragma unroll
            for (int yi = 0; yi < TILE_SIZE_Y; ++yi)
#pragma unroll
                for (int xi = 0; xi < TILE_SIZE_X; ++xi)
                    sum[yi][xi] += LOAD(input + (size_t)(row[yi] + i) * IN_W + col[xi] + j) * f;
        }
    }
#endif

#pragma unroll
    for (int yi = 0; yi < TILE_SIZE_Y; ++yi) {
        const int y = y0 + ty + yi * BLOCK_SIZE_Y;
#pragma unroll
        for (int xi = 0; xi < TILE_SIZE_X; ++xi) {
            const int x = x0 + tx + xi * BLOCK_SIZE_X;
            if (y < IMG_H && x < IMG_W) output[(size_t)y * IMG_W + x] = sum[yi][xi];
        }
    }
}
