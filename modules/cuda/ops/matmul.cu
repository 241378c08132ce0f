#include "cuda/convert.hpp"
#include "cuda/ops/matmul.hpp"

namespace dpt::cuda {

namespace {

// The elements a column-major operand of rows x cols (leading dimension ld) spans over batch matrices.
size_t span(int rows, int cols, int ld, long long stride, int batch) {
  if (rows == 0 || cols == 0 || batch == 0) return 0;
  return size_t(batch - 1) * size_t(stride) + size_t(cols - 1) * size_t(ld) + size_t(rows);
}

}  // namespace

int gemm(dpt_backend_context &c, int32_t dtype, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
         int k, float alpha, GemmOperand a, GemmOperand b, float beta, float *out, int ldc,
         long long stride_c, int batch, const Error &e) {
  const int ordinal = c.ordinal;
  // float32 as before this file existed: one matrix through cublasSgemm (dense), batches (attention, whose
  // strides are never 0) through cublasSgemmStridedBatched.
  if (!is_16_bit(dtype) && batch == 1 && a.stride == 0 && b.stride == 0 && stride_c == 0) {
    DPT_CUBLAS("cublasSgemm",
               cublasSgemm(c.blas, op_a, op_b, m, n, k, &alpha, a.data, a.ld, b.data, b.ld, &beta, out, ldc));
    return 0;
  }
  if (!is_16_bit(dtype)) {
    DPT_CUBLAS("cublasSgemmStridedBatched",
               cublasSgemmStridedBatched(c.blas, op_a, op_b, m, n, k, &alpha, a.data, a.ld, a.stride, b.data,
                                         b.ld, b.stride, &beta, out, ldc, stride_c, batch));
    return 0;
  }
  // A is stored m x k (k x m transposed), B k x n (n x k): the spans the copies must cover.
  const bool ta = op_a != CUBLAS_OP_N, tb = op_b != CUBLAS_OP_N;
  const size_t span_a = span(ta ? k : m, ta ? m : k, a.ld, a.stride, batch);
  const size_t span_b = span(tb ? n : k, tb ? k : n, b.ld, b.stride, batch);
  const size_t bytes_a = (span_a * 2 + 255) / 256 * 256;  // B's copy aligned as cudaMalloc's
  if (const int rc = ensure_operands(c, bytes_a + span_b * 2, e)) return rc;
  char *copies = static_cast<char *>(c.operands);
  if (const int rc = launch_narrow(c, dtype, a.data, reinterpret_cast<uint16_t *>(copies), span_a, e))
    return rc;
  if (const int rc =
          launch_narrow(c, dtype, b.data, reinterpret_cast<uint16_t *>(copies + bytes_a), span_b, e))
    return rc;
  const cudaDataType type = dtype == DPT_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  DPT_CUBLAS("cublasGemmStridedBatchedEx",
             cublasGemmStridedBatchedEx(c.blas, op_a, op_b, m, n, k, &alpha, copies, type, a.ld, a.stride,
                                        copies + bytes_a, type, b.ld, b.stride, &beta, out, CUDA_R_32F, ldc,
                                        stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return 0;
}

int round_to_dtype(dpt_backend_context &c, int32_t dtype, const float *x, float *out, size_t count,
                   const Error &e) {
  return launch_round(c, dtype, x, out, count, e);
}

}  // namespace dpt::cuda
