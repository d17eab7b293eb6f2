"""CUDA text several kernels share: reductions over a thread block (one warp shuffle pass, then the warps'
partials through shared memory; a row kernel runs one block per row and calls these with every thread), and the
index arithmetic of kernels over NCHW images (a flat index's pixel, a filter tap's input from its output and
back)."""

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

NCHW_INDEX = r"""
/* a pixel of an NCHW tensor: its column, its row and its plane (image * channels + channel) */
struct kc_pixel { int x, y, plane; };
/* the pixel at flat index `idx` of a tensor whose planes are `rows` x `cols` */
__device__ __forceinline__ kc_pixel kc_pixel_of(int idx, int rows, int cols) {
    kc_pixel p;
    p.x = idx % cols;
    int t = idx / cols;
    p.y = t % rows;
    p.plane = t / rows;
    return p;
}
/* along one axis, the input position that output `o`'s filter tap `k` reads; -1 where it falls in the padding */
__device__ __forceinline__ int kc_tap_input(int o, int k, int stride, int pad, int dilation, int size) {
    int i = o * stride - pad + k * dilation;
    return (i < 0 || i >= size) ? -1 : i;
}
/* along one axis, the inverse: the output whose filter tap `k` reads input position `i`; -1 where none does */
__device__ __forceinline__ int kc_tap_output(int i, int k, int stride, int pad, int dilation, int outs) {
    int t = i + pad - k * dilation;
    if (t < 0 || t % stride) return -1;
    int o = t / stride;
    return o < outs ? o : -1;
}
"""
