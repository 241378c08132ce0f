// "dense" and "linear": y = x W^T + b over rows of in features, W [units, in] (PyTorch's layout). "dense"
// takes the flattened sample as one row; "linear" each row of the last dimension (n * rows-per-sample
// rows): the same GEMMs.
#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

// Rows of in_size features in the call's batch.
size_t rows(const dpt_op_call &c) {
  return n(c) * (sample_size(c.inputs[0]) / size_t(c.params[0].dims[1]));
}

void forward(const dpt_op_call &c) {
  const size_t in_size = size_t(c.params[0].dims[1]), units = size_t(c.ints[0]), count = rows(c);
  const float *w = param(c, 0), *b = param(c, 1);
  float *y = out(c);
  for (size_t s = 0; s < count; ++s)
    for (size_t o = 0; o < units; ++o) y[s * units + o] = b != nullptr ? b[o] : 0.0f;
  blas::gemm(false, true, count, units, in_size, 1.0f, in(c), in_size, w, in_size, 1.0f, y, units,
             blas::precision_of(c));
}

void backward(const dpt_op_call &c) {
  const size_t in_size = size_t(c.params[0].dims[1]), units = size_t(c.ints[0]), count = rows(c);
  if (count == 0) return;
  const float *g = dy(c);
  if (float *dw = param_grad(c, 0))
    blas::gemm(true, false, units, in_size, count, 1.0f, g, units, in(c), in_size, 1.0f, dw, in_size,
               blas::precision_of(c));
  if (float *db = param_grad(c, 1))
    for (size_t s = 0; s < count; ++s)
      for (size_t o = 0; o < units; ++o) db[o] += g[s * units + o];
  if (float *d = dx(c))
    blas::gemm(false, false, count, in_size, units, 1.0f, g, units, param(c, 0), in_size, 0.0f, d, in_size,
               blas::precision_of(c));
}

}  // namespace

extern const OpKernel kDense = {"dense", forward, backward, nullptr};
extern const OpKernel kLinear = {"linear", forward, backward, nullptr};

}  // namespace dpt::cpu
