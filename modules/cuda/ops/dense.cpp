// "dense" and "linear": y = x W^T + b through cuBLAS (ops/matmul.hpp: SGEMM, or 16-bit inputs) over rows of
// in features, W [units, in], an optional bias [units] added by the module's bias kernel. "dense" takes each
// flattened sample as one row, "linear" each row of the sample's last dimension: x is [rows, in] either way,
// rows = n * (sample size / in), and "n" below counts rows. cuBLAS is column-major and the op row-major: a
// row-major [r, c] matrix is the column-major [c, r] one, its transpose. So y = x W^T (row-major) is y^T = W
// x^T (column-major), and so on below. y and dx are written (beta 0), dW and db accumulate (beta 1).
#include "cuda/kernels.hpp"
#include "cuda/ops/matmul.hpp"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

struct Dense {
  size_t n, in, units;
};

int dense_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
             Dense &d) {
  const dpt_tensor &x = call.inputs[0], &y = call.output, &w = call.params[0], &b = call.params[1];
  const int64_t in = w.rank == 2 ? w.dims[1] : 0, units = call.ints[0], size = dpt_tensor_sample_size(&x);
  const int64_t per_sample = in > 0 && size % in == 0 ? size / in : 0;  // rows of one sample
  const bool bias_ok = call.param_count < 2 || has_dims(b, {units});
  if (units <= 0 || per_sample == 0 || dpt_tensor_sample_size(&y) != per_sample * units ||
      !has_dims(w, {units, in}) || !bias_ok ||
      !fit_int(size_t(call.n) * size_t(per_sample), size_t(in), size_t(units)))
    return invalid_call(
        c, call, pass, e, "bad shape (n %lld, input %s, output %s, units %lld, weight %s%s%s)",
        (long long)call.n, dims_text(x).text, dims_text(y).text, (long long)units, dims_text(w).text,
        call.param_count > 1 ? ", bias " : "", call.param_count > 1 ? dims_text(b).text : "");
  d = Dense{size_t(call.n) * size_t(per_sample), size_t(in), size_t(units)};
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Dense d{};
  if (const int rc = dense_of(c, call, kForward, e, d)) return rc;
  if (d.n == 0) return 0;
  const float *x = input(call), *w = param(call, 0), *b = param(call, 1);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e,
                             {{"inputs[0].data", x}, {"params[0].data (weight)", w}, {"output.data", y}}))
    return rc;
  // y^T [units, n] = (W^T [in, units])^T x^T [in, n]
  if (const int rc = gemm(c, call.matmul_dtype, CUBLAS_OP_T, CUBLAS_OP_N, int(d.units), int(d.n), int(d.in),
                          1.0f, {w, int(d.in), 0}, {x, int(d.in), 0}, 0.0f, y, int(d.units), 0, 1, e))
    return rc;
  if (b == nullptr) return 0;
  return launch_bias_add(c, d.n, d.units, 1, b, y, e);
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Dense d{};
  if (const int rc = dense_of(c, call, kBackward, e, d)) return rc;
  float *dw = param_grad(call, 0), *db = param_grad(call, 1), *dx = input_grad(call);
  if (d.n == 0 || (dw == nullptr && db == nullptr && dx == nullptr)) return 0;
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output_grad", dy}})) return rc;
  if (dw != nullptr) {
    const float *x = input(call);
    if (const int rc = require(c, call, kBackward, e, {{"inputs[0].data", x}})) return rc;
    // dW^T [in, units] += x^T [in, n] (dy^T [units, n])^T, i.e. dW += dy^T x
    if (const int rc = gemm(c, call.matmul_dtype, CUBLAS_OP_N, CUBLAS_OP_T, int(d.in), int(d.units), int(d.n),
                            1.0f, {x, int(d.in), 0}, {dy, int(d.units), 0}, 1.0f, dw, int(d.in), 0, 1, e))
      return rc;
  }
  if (db != nullptr)
    if (const int rc = launch_bias_grad(c, d.n, d.units, 1, dy, db, e)) return rc;
  if (dx != nullptr) {
    const float *w = param(call, 0);
    if (const int rc = require(c, call, kBackward, e, {{"params[0].data (weight)", w}})) return rc;
    // dx^T [in, n] = W^T [in, units] dy^T [units, n], i.e. dx = dy W
    if (const int rc = gemm(c, call.matmul_dtype, CUBLAS_OP_N, CUBLAS_OP_N, int(d.in), int(d.n), int(d.units),
                            1.0f, {w, int(d.in), 0}, {dy, int(d.units), 0}, 0.0f, dx, int(d.in), 0, 1, e))
      return rc;
  }
  return 0;
}

}  // namespace

extern const OpKernel kDense = {"dense", 1, 1, 1, 2, forward, backward};
extern const OpKernel kLinear = {"linear", 1, 1, 1, 2, forward, backward};

}  // namespace dpt::cuda
