"""CUDA text several kernels share: reductions over a thread block (one warp shuffle pass, then the warps'
partials through shared memory). A row kernel runs one block per row and calls these with every thread."""

BLOCK_REDUCE = r"""
__device__ __forceinline__ float kc_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}
__device__ __forceinline__ float kc_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
    return v;
}
/* every thread of the block gets the block's sum; `scratch` holds 32 floats */
__device__ float kc_block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = kc_warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x >> 5)) ? scratch[lane] : 0.0f;
    if (warp == 0) v = kc_warp_sum(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    return scratch[0];
}
__device__ float kc_block_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = kc_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x >> 5)) ? scratch[lane] : __int_as_float(0xff800000);  /* -inf without math headers */
    if (warp == 0) v = kc_warp_max(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    return scratch[0];
}
"""
