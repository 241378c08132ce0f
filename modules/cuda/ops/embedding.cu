// "token_embedding" and "position_embedding" (op_call.h), with the CPU kernels' sums in their order, so the
// same bits: token_embedding's backward adds the dy row of every position whose token is v into row v of
// the weight gradient, samples and positions in order (one block per row of the table, one thread per
// feature, scanning the tokens: no atomics; V x positions comparisons, fine for byte and small subword
// vocabularies); position_embedding's adds dy over the samples in order (one thread per element of the
// table).
#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

__global__ void gather_kernel(const int32_t *__restrict__ tokens, const float *__restrict__ table,
                              float *__restrict__ y, size_t positions, size_t dim) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < positions * dim;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = table[size_t(tokens[i / dim]) * dim + i % dim];
}

__global__ void scatter_add_kernel(const int32_t *__restrict__ tokens, const float *__restrict__ dy,
                                   float *__restrict__ dtable, size_t positions, size_t dim,
                                   size_t vocabulary) {
  for (size_t v = blockIdx.x; v < vocabulary; v += gridDim.x)
    for (size_t k = threadIdx.x; k < dim; k += blockDim.x) {
      float acc = dtable[v * dim + k];  // the CPU adds into the gradient row by row: the same order
      for (size_t t = 0; t < positions; ++t)
        if (size_t(tokens[t]) == v) acc = __fadd_rn(acc, dy[t * dim + k]);
      dtable[v * dim + k] = acc;
    }
}

__global__ void add_table_kernel(const float *__restrict__ x, const float *__restrict__ table,
                                 float *__restrict__ y, size_t n, size_t size) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * size;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(x[i], table[i % size]);
}

__global__ void sum_samples_kernel(const float *__restrict__ dy, float *__restrict__ dtable, size_t n,
                                   size_t size) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
       i += size_t(gridDim.x) * blockDim.x) {
    float acc = dtable[i];
    for (size_t s = 0; s < n; ++s) acc = __fadd_rn(acc, dy[s * size + i]);
    dtable[i] = acc;
  }
}

struct Table {
  size_t positions, dim, vocabulary;
};

int token_shape(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
                Table &t) {
  const dpt_tensor &x = call.inputs[0], &y = call.output, &w = call.params[0];
  const int64_t vocabulary = call.ints[0], dim = call.ints[1];
  if (x.rank != 1 || vocabulary <= 0 || dim <= 0 || !has_dims(y, {x.dims[0], dim}) ||
      !has_dims(w, {vocabulary, dim}))
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s, weight %s, ints %lld, %lld)",
                        dims_text(x).text, dims_text(y).text, dims_text(w).text, (long long)vocabulary,
                        (long long)dim);
  t = Table{size_t(call.n) * size_t(x.dims[0]), size_t(dim), size_t(vocabulary)};
  return 0;
}

const int32_t *tokens_of(const dpt_op_call &call) {
  return static_cast<const int32_t *>(call.inputs[0].data);
}

int token_forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Table t{};
  if (const int rc = token_shape(c, call, kForward, e, t)) return rc;
  if (t.positions == 0) return 0;
  const int32_t *tokens = tokens_of(call);
  const float *w = param(call, 0);
  float *y = output(call);
  if (const int rc =
          require(c, call, kForward, e,
                  {{"inputs[0].data", tokens}, {"params[0].data (weight)", w}, {"output.data", y}}))
    return rc;
  gather_kernel<<<grid_for(t.positions * t.dim), kOpThreads, 0, c.stream>>>(tokens, w, y, t.positions, t.dim);
  return check_launch(c, "token_embedding gather kernel", e);
}

int token_backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Table t{};
  if (const int rc = token_shape(c, call, kBackward, e, t)) return rc;
  float *dw = param_grad(call, 0);
  if (t.positions == 0 || dw == nullptr) return 0;
  const int32_t *tokens = tokens_of(call);
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"inputs[0].data", tokens}, {"output_grad", dy}}))
    return rc;
  scatter_add_kernel<<<grid_for(t.vocabulary, 1, 65535), kOpThreads, 0, c.stream>>>(
      tokens, dy, dw, t.positions, t.dim, t.vocabulary);
  return check_launch(c, "token_embedding scatter kernel", e);
}

int position_shape(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
                   size_t &size) {
  const dpt_tensor &x = call.inputs[0], &y = call.output, &w = call.params[0];
  if (x.rank != 2 || !same_dims(x, y) || !same_dims(x, w))
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s, weight %s: all [T, C])",
                        dims_text(x).text, dims_text(y).text, dims_text(w).text);
  size = size_t(dpt_tensor_sample_size(&x));
  return 0;
}

int position_forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  size_t size = 0;
  if (const int rc = position_shape(c, call, kForward, e, size)) return rc;
  const size_t n = size_t(call.n);
  if (n == 0) return 0;
  const float *x = input(call), *w = param(call, 0);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e,
                             {{"inputs[0].data", x}, {"params[0].data (weight)", w}, {"output.data", y}}))
    return rc;
  add_table_kernel<<<grid_for(n * size), kOpThreads, 0, c.stream>>>(x, w, y, n, size);
  return check_launch(c, "position_embedding kernel", e);
}

int position_backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  size_t size = 0;
  if (const int rc = position_shape(c, call, kBackward, e, size)) return rc;
  const size_t n = size_t(call.n);
  float *dx = input_grad(call), *dw = param_grad(call, 0);
  if (n == 0 || (dx == nullptr && dw == nullptr)) return 0;
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output_grad", dy}})) return rc;
  if (dx != nullptr)
    DPT_CUDA("cudaMemcpyAsync (position_embedding backward)",
             cudaMemcpyAsync(dx, dy, n * size * sizeof(float), cudaMemcpyDeviceToDevice, c.stream));
  if (dw == nullptr) return 0;
  sum_samples_kernel<<<grid_for(size), kOpThreads, 0, c.stream>>>(dy, dw, n, size);
  return check_launch(c, "position_embedding gradient kernel", e);
}

}  // namespace

extern const OpKernel kTokenEmbedding = {"token_embedding", 1, 1, 1, 1, token_forward, token_backward, true};
extern const OpKernel kPositionEmbedding = {"position_embedding", 1, 1, 1, 1, position_forward,
                                            position_backward};

}  // namespace dpt::cuda
