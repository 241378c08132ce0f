// "concat": the inputs (2 to DPT_OP_MAX_INPUTS) stacked along dimension 0 (channels) of each sample. Input i
// is a block of width size_i (its sample size) at offset_i (the sizes of the inputs before it) in each
// output sample: forward copies each input's rows into the output, backward copies each block of dy back
// into the input gradients that are asked for. Copies only: the same bits as the CPU kernel.
#include <cstdio>

#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

// dst[r * dst_pitch + dst_offset + j] = src[r * src_pitch + src_offset + j], r < rows, j < width; the
// element k = r * width + j indexed by I (launch.cuh), the addresses in size_t.
template <class I>
__global__ void copy_rows_kernel(const float *__restrict__ src, size_t src_pitch, size_t src_offset,
                                 float *__restrict__ dst, size_t dst_pitch, size_t dst_offset, I total,
                                 I width) {
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += I(gridDim.x) * blockDim.x) {
    const size_t r = k / width, j = k % width;
    dst[r * dst_pitch + dst_offset + j] = src[r * src_pitch + src_offset + j];
  }
}

int launch_copy_rows(dpt_backend_context &c, const float *src, size_t src_pitch, size_t src_offset,
                     float *dst, size_t dst_pitch, size_t dst_offset, size_t rows, size_t width,
                     const Error &e) {
  const size_t total = rows * width;
  if (index_fits_32(total))
    copy_rows_kernel<uint32_t><<<grid_for(total), kOpThreads, 0, c.stream>>>(
        src, src_pitch, src_offset, dst, dst_pitch, dst_offset, uint32_t(total), uint32_t(width));
  else
    copy_rows_kernel<size_t><<<grid_for(total), kOpThreads, 0, c.stream>>>(
        src, src_pitch, src_offset, dst, dst_pitch, dst_offset, total, width);
  return check_launch(c, "concat copy kernel", e);
}

// Every input has the output's rank and dims but the first; the first dims add up to the output's.
int check_shape(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e) {
  const dpt_tensor &y = call.output;
  int64_t channels = 0;
  bool ok = true;
  for (int i = 0; i < call.input_count; ++i) {
    const dpt_tensor &x = call.inputs[i];
    ok = ok && x.rank == y.rank;
    for (int32_t k = 1; ok && k < x.rank; ++k) ok = x.dims[k] == y.dims[k];
    channels += x.dims[0];
  }
  if (ok && channels == y.dims[0]) return 0;
  char text[4 * 100] = "";
  size_t used = 0;
  for (int i = 0; i < call.input_count; ++i)
    used += size_t(std::snprintf(text + used, sizeof text - used, i == 0 ? "%s" : ", %s",
                                 dims_text(call.inputs[i]).text));
  return invalid_call(c, call, pass, e, "bad shape (inputs %s, output %s: stacked along dimension 0)", text,
                      dims_text(y).text);
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  if (const int rc = check_shape(c, call, kForward, e)) return rc;
  if (call.n == 0) return 0;
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e, {{"output.data", y}})) return rc;
  const size_t rows = size_t(call.n), out_size = size_t(dpt_tensor_sample_size(&call.output));
  static const char *const kNames[DPT_OP_MAX_INPUTS] = {"inputs[0].data", "inputs[1].data", "inputs[2].data",
                                                        "inputs[3].data"};
  size_t offset = 0;
  for (int i = 0; i < call.input_count; ++i) {
    const float *x = input(call, i);
    const size_t size = size_t(dpt_tensor_sample_size(&call.inputs[i]));
    if (const int rc = require(c, call, kForward, e, {{kNames[i], x}})) return rc;
    if (const int rc = launch_copy_rows(c, x, size, 0, y, out_size, offset, rows, size, e)) return rc;
    offset += size;
  }
  return 0;
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  if (const int rc = check_shape(c, call, kBackward, e)) return rc;
  bool any = false;
  for (int i = 0; i < call.input_count; ++i) any = any || input_grad(call, i) != nullptr;
  if (call.n == 0 || !any) return 0;
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output_grad", dy}})) return rc;
  const size_t rows = size_t(call.n), out_size = size_t(dpt_tensor_sample_size(&call.output));
  size_t offset = 0;
  for (int i = 0; i < call.input_count; ++i) {
    const size_t size = size_t(dpt_tensor_sample_size(&call.inputs[i]));
    if (float *dx = input_grad(call, i))
      if (const int rc = launch_copy_rows(c, dy, out_size, offset, dx, size, 0, rows, size, e)) return rc;
    offset += size;
  }
  return 0;
}

}  // namespace

extern const OpKernel kConcat = {"concat", 2, DPT_OP_MAX_INPUTS, 0, 0, forward, backward};

}  // namespace dpt::cuda
