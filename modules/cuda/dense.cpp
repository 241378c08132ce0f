// cuBLAS is column-major and the CPU layer row-major: a row-major [r, c] matrix is the column-major [c, r]
// one, its transpose. So y = x W^T (row-major) is y^T = W x^T (column-major), and so on below.
#include "cuda/dense.hpp"

#include "cuda/kernels.hpp"

namespace dpt::cuda {

namespace {

int check_shape(const dpt_backend_context &c, const char *call, size_t n, size_t in, size_t out,
                const Error &e) {
  if (in == 0 || out == 0 || !fit_int(n, in, out))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: bad shape (n %zu, in %zu, out %zu)",
                  c.ordinal, call, n, in, out);
  return 0;
}

}  // namespace

int dense_forward(dpt_backend_context *ctx, size_t n, size_t in, size_t out, const float *x,
                  const float *weights, const float *bias, float *y, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "dense_forward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (const int rc = check_shape(c, "dense_forward", n, in, out, e)) return rc;
    if (n == 0) return 0;
    if (x == nullptr || weights == nullptr || y == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: dense_forward: NULL pointer", ordinal);
    const float one = 1.0f, zero = 0.0f;
    // y^T [out, n] = (W^T [in, out])^T x^T [in, n]
    DPT_CUBLAS("cublasSgemm", cublasSgemm(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(out), int(n), int(in), &one,
                                          weights, int(in), x, int(in), &zero, y, int(out)));
    if (bias == nullptr) return 0;
    return launch_bias_add(c, n, out, 1, bias, y, e);
  });
}

int dense_backward(dpt_backend_context *ctx, size_t n, size_t in, size_t out, const float *x,
                   const float *weights, const float *dy, float *dx, float *dweights, float *dbias,
                   char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "dense_backward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (const int rc = check_shape(c, "dense_backward", n, in, out, e)) return rc;
    if (n == 0) return 0;
    if (x == nullptr || weights == nullptr || dy == nullptr || dweights == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: dense_backward: NULL pointer", ordinal);
    const float one = 1.0f, zero = 0.0f;
    // dW^T [in, out] += x^T [in, n] (dy^T [out, n])^T, i.e. dW += dy^T x
    DPT_CUBLAS("cublasSgemm", cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, int(in), int(out), int(n), &one,
                                          x, int(in), dy, int(out), &one, dweights, int(in)));
    if (dbias != nullptr)
      if (const int rc = launch_bias_grad(c, n, out, 1, dy, dbias, e)) return rc;
    if (dx == nullptr) return 0;
    // dx^T [in, n] = W^T [in, out] dy^T [out, n], i.e. dx = dy W
    DPT_CUBLAS("cublasSgemm", cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, int(in), int(n), int(out), &one,
                                          weights, int(in), dy, int(out), &zero, dx, int(in)));
    return 0;
  });
}

}  // namespace dpt::cuda
