// "global_avg_pool": x [c, h, w] -> y [c], the mean of each plane. Forward: one warp per plane (n * c
// planes); lane l adds the plane's elements l, l + 32, ... in double, in order, then a fixed butterfly adds
// the lanes' sums (launch.cuh), and y = float(sum / pixels), as the CPU kernel (which adds in plain order:
// the doubles may differ in their last bits, the floats by at most one rounding). Backward:
// dx = dy * float(1 / pixels) per element, as the CPU kernel: the same bits.
#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

constexpr int kWarpsPerBlock = kOpThreads / kWarp;

__global__ void gap_forward_kernel(const float *__restrict__ x, float *__restrict__ y, size_t planes,
                                   size_t pixels) {
  const size_t lane = threadIdx.x % kWarp;
  const size_t warps = size_t(gridDim.x) * kWarpsPerBlock;
  // (the loop bound is the same for every lane of a warp: the butterfly has all 32)
  for (size_t p = size_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp; p < planes; p += warps) {
    const float *plane = x + p * pixels;
    double sum = 0.0;
    for (size_t i = lane; i < pixels; i += kWarp) sum += double(plane[i]);
    sum = warp_sum(sum);
    if (lane == 0) y[p] = float(sum / double(pixels));
  }
}

// (I: the index type, launch.cuh)
template <class I>
__global__ void gap_backward_kernel(const float *__restrict__ dy, float *__restrict__ dx, I total, I pixels,
                                    float scale) {
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += I(gridDim.x) * blockDim.x)
    dx[k] = __fmul_rn(dy[k / pixels], scale);
}

// x [c, h, w], y [c]: the planes of the call (n * c) and their pixels (h * w).
int shape_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
             size_t &planes, size_t &pixels) {
  const dpt_tensor &x = call.inputs[0], &y = call.output;
  if (x.rank != 3 || !has_dims(y, {x.dims[0]}))
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s: [c, h, w] -> [c])",
                        dims_text(x).text, dims_text(y).text);
  planes = size_t(call.n) * size_t(x.dims[0]);
  pixels = size_t(x.dims[1]) * size_t(x.dims[2]);
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  size_t planes = 0, pixels = 0;
  if (const int rc = shape_of(c, call, kForward, e, planes, pixels)) return rc;
  if (planes == 0) return 0;
  const float *x = input(call);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e, {{"inputs[0].data", x}, {"output.data", y}})) return rc;
  gap_forward_kernel<<<grid_for(planes, kWarpsPerBlock, 65535), kOpThreads, 0, c.stream>>>(x, y, planes,
                                                                                           pixels);
  return check_launch(c, "global_avg_pool forward kernel", e);
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  size_t planes = 0, pixels = 0;
  if (const int rc = shape_of(c, call, kBackward, e, planes, pixels)) return rc;
  float *dx = input_grad(call);
  if (planes == 0 || dx == nullptr) return 0;
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output_grad", dy}})) return rc;
  const float scale = 1.0f / float(pixels);  // (as the CPU kernel)
  const size_t total = planes * pixels;
  if (index_fits_32(total))
    gap_backward_kernel<uint32_t>
        <<<grid_for(total), kOpThreads, 0, c.stream>>>(dy, dx, uint32_t(total), uint32_t(pixels), scale);
  else
    gap_backward_kernel<size_t><<<grid_for(total), kOpThreads, 0, c.stream>>>(dy, dx, total, pixels, scale);
  return check_launch(c, "global_avg_pool backward kernel", e);
}

}  // namespace

extern const OpKernel kGlobalAvgPool = {"global_avg_pool", 1, 1, 0, 0, forward, backward};

}  // namespace dpt::cuda
