// The matrix products of dense, linear and causal_self_attention, at the call's matmul_dtype
// (op_call.h): float32 (cublasSgemmStridedBatched; TF32 only when the context allows it), or 16-bit inputs
// (bfloat16, float16): both operands rounded to nearest even into 16-bit copies in the context's operand
// buffer, then cublasGemmStridedBatchedEx with a float32 C and CUBLAS_COMPUTE_32F -- tensor cores, float32
// sums, float32 outputs, as the CPU kernels do (docs/precision.md).
#pragma once

#include <cstdint>

#include "cuda/context.hpp"

namespace dpt::cuda {

// A column-major operand of cuBLAS: its data, leading dimension and the distance between the matrices of a
// batch (0 for one matrix).
struct GemmOperand {
  const float *data;
  int ld;
  long long stride;
};

// C = alpha op(A) op(B) + beta C for batch matrices, column-major, with cuBLAS's meaning of every argument
// (op(A) is m x k, op(B) k x n, C m x n). dtype: DPT_DTYPE_F32, _BF16 or _F16 (the inputs' precision).
int gemm(dpt_backend_context &c, int32_t dtype, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n,
         int k, float alpha, GemmOperand a, GemmOperand b, float beta, float *out, int ldc,
         long long stride_c, int batch, const Error &e);

// x rounded to the 16-bit dtype and widened back, in place of out (count floats; out may be x): what a
// convolution on 16-bit inputs multiplies (every bfloat16 and float16 value is a TF32 value, so tensor-op
// math multiplies them exactly and sums in float32).
int round_to_dtype(dpt_backend_context &c, int32_t dtype, const float *x, float *out, size_t count,
                   const Error &e);

}  // namespace dpt::cuda
