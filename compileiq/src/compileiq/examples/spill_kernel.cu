// A register-heavy CUDA kernel that spills with ptxas's default settings on sm_90.
//
// Each thread accumulates an 8x8 tile of C = A * B in registers (64 accumulators plus 16
// operands and addresses per k step). __launch_bounds__(256, 3) asks ptxas to fit three
// 256-thread blocks on one SM, which caps every thread at 80 registers: fewer than the tile
// wants, so the default build spills to local memory. ptxas options change how much: -O1 spills
// less, --override-directive-values with a larger -maxrregcount spills nothing (at the price of
// occupancy), -O0 and --Ofast-compile spill far more. That spread is what the CompileIQ demo
// searches (spill bytes against SASS instruction count).
//
// Regenerate the bundled PTX with the installed nvcc:
//   nvcc -arch=sm_90 -ptx spill_kernel.cu -o spill_kernel.ptx

#define TILE_M 8
#define TILE_N 8

extern "C" __global__ void __launch_bounds__(256, 3)
spill_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n)
{
    const int row = (blockIdx.y * blockDim.y + threadIdx.y) * TILE_M;
    const int col = (blockIdx.x * blockDim.x + threadIdx.x) * TILE_N;
    if (row >= n || col >= n) return;

    float acc[TILE_M][TILE_N];
#pragma unroll
    for (int i = 0; i < TILE_M; ++i)
#pragma unroll
        for (int j = 0; j < TILE_N; ++j) acc[i][j] = 0.0f;

    for (int k = 0; k < n; ++k) {
        float a[TILE_M], b[TILE_N];
#pragma unroll
        for (int i = 0; i < TILE_M; ++i) a[i] = A[(row + i) * n + k];
#pragma unroll
        for (int j = 0; j < TILE_N; ++j) b[j] = B[k * n + col + j];
#pragma unroll
        for (int i = 0; i < TILE_M; ++i)
#pragma unroll
            for (int j = 0; j < TILE_N; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

#pragma unroll
    for (int i = 0; i < TILE_M; ++i)
#pragma unroll
        for (int j = 0; j < TILE_N; ++j) C[(row + i) * n + col + j] = acc[i][j];
}
