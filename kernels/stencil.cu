// One Jacobi sweep of a star stencil over a float32 grid u[nz][ny][nx] (x fastest):
//   points == 7 (3D): v = C0 * u[z][y][x] + C1 * (6 face neighbours)
//   points == 5 (2D, every z plane on its own): v = C0 * u + C1 * (4 neighbours in the plane)
// Boundary points (where a neighbour would fall outside the grid) are copied unchanged.
//
// Slots (rendered as #defines by the template library):
//   BLOCK_X, BLOCK_Y  thread block shape in the xy plane
//   Z_PER_THREAD      register blocking along z: a thread marches through this many consecutive
//                     planes, keeping the planes below/at/above in registers, so each value is
//                     loaded from global memory once per thread instead of three times
//   USE_SHARED        1: the current plane (with a one-point halo) is staged in shared memory and
//                     x/y neighbours are read from there; 0: x/y neighbours are global loads
//                     (served by L1/L2)
//   READ_ONLY         1: global loads through the read-only data cache (__ldg)
// Problem: PROBLEM_NX, PROBLEM_NY, PROBLEM_NZ, PROBLEM_POINTS (5 or 7).

#if PROBLEM_POINTS != 5 && PROBLEM_POINTS != 7
#error "stencil: points must be 5 or 7"
#endif

#define NX PROBLEM_NX
#define NY PROBLEM_NY
#define NZ PROBLEM_NZ
#define C0 0.5f
#define C1 (0.5f / (PROBLEM_POINTS - 1))
#define PLANE ((size_t)NX * NY)

#if READ_ONLY
#define LOAD(ptr) __ldg(ptr)
typedef const float* __restrict__ input_ptr;
#else
#define LOAD(ptr) (*(ptr))
typedef const float* input_ptr;
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
stencil(input_ptr u, float* __restrict__ v)
{
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int x = blockIdx.x * BLOCK_X + tx;
    const int y = blockIdx.y * BLOCK_Y + ty;
    const int z0 = blockIdx.z * Z_PER_THREAD;
    const bool inside = x < NX && y < NY;  // threads outside still take part in barriers
    const bool edge_xy = x == 0 || y == 0 || x == NX - 1 || y == NY - 1;
    const size_t xy = (size_t)y * NX + x;

#if USE_SHARED
    __shared__ float plane[BLOCK_Y + 2][BLOCK_X + 2];
#endif
#if PROBLEM_POINTS == 7
    // Register queue along z: below = u[z-1], cur = u[z], above = u[z+1].
    float below = (inside && z0 > 0) ? LOAD(u + (z0 - 1) * PLANE + xy) : 0.0f;
    float cur = (inside && z0 < NZ) ? LOAD(u + z0 * PLANE + xy) : 0.0f;
#endif

#pragma unroll
    for (int k = 0; k < Z_PER_THREAD; ++k) {
        const int z = z0 + k;
        if (z >= NZ) break;  // uniform over the block (z depends only on blockIdx.z)
        const size_t at = z * PLANE + xy;
#if PROBLEM_POINTS == 7
        const float above = (inside && z + 1 < NZ) ? LOAD(u + at + PLANE) : 0.0f;
#else
        const float cur = inside ? LOAD(u + at) : 0.0f;
#endif
#if USE_SHARED
        // Stage the plane: every thread its own point, threads on the block's rim also the halo
        // point beside them. Only interior points read neighbours, and those are all in the grid.
        plane[ty + 1][tx + 1] = cur;
        if (tx == 0) plane[ty + 1][0] = (inside && x > 0) ? LOAD(u + at - 1) : 0.0f;
        if (tx == BLOCK_X - 1) plane[ty + 1][BLOCK_X + 1] = (inside && x + 1 < NX) ? LOAD(u + at + 1) : 0.0f;
        if (ty == 0) plane[0][tx + 1] = (inside && y > 0) ? LOAD(u + at - NX) : 0.0f;
        if (ty == BLOCK_Y - 1) plane[BLOCK_Y + 1][tx + 1] = (inside && y + 1 < NY) ? LOAD(u + at + NX) : 0.0f;
        __syncthreads();
        const float xy_sum = plane[ty + 1][tx] + plane[ty + 1][tx + 2] + plane[ty][tx + 1] + plane[ty + 2][tx + 1];
#else
        float xy_sum = 0.0f;
        if (inside && !edge_xy)
            xy_sum = LOAD(u + at - 1) + LOAD(u + at + 1) + LOAD(u + at - NX) + LOAD(u + at + NX);
#endif
        if (inside) {
#if PROBLEM_POINTS == 7
            const bool boundary = edge_xy || z == 0 || z == NZ - 1;
            v[at] = boundary ? cur : C0 * cur + C1 * (xy_sum + below + above);
#else
            v[at] = edge_xy ? cur : C0 * cur + C1 * xy_sum;
#endif
        }
#if USE_SHARED
        __syncthreads();  // the plane buffer is refilled in the next iteration
#endif
#if PROBLEM_POINTS == 7
        below = cur;
        cur = above;
#endif
    }
}
