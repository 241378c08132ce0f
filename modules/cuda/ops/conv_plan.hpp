// A convolution shape as cuDNN needs it: descriptors, and for each direction (forward, backward data,
// backward filter) the algorithm chosen for it, once per context and shape.
//
// Choice: in deterministic mode, the first of cuDNN's heuristic list (cudnnGet*_v7) that is deterministic,
// fits the workspace limit and (without TF32) uses no tensor-core math. Otherwise the fastest such algorithm
// measured by cudnnFind*. Tensor-core math is TF32 (allowed by the context, or by 16-bit inputs: the op
// rounds them to bfloat16 or float16 values first, and every such value is a TF32 value, so the products
// are exact); never CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which may round float32 inputs to float16.
// Deterministic mode never measures: timings vary from run to run, and so would the algorithm, and with it
// the bits of the results.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

#include "cuda/context.hpp"

namespace dpt::cuda {

// One convolution's shape, checked by the op (ops/conv2d.cpp): n > 0 samples of [in_c, in_h, in_w], out_c
// outputs, a square kernel, stride and padding; and the precision of its inputs (dpt_op_call::matmul_dtype).
struct ConvShape {
  int32_t n, in_c, in_h, in_w, out_c, kernel, stride, padding, matmul_dtype;
  bool tensor_ops(const dpt_backend_context &c) const {
    return c.allow_tf32() || matmul_dtype != DPT_DTYPE_F32;
  }
};

struct ConvAlgorithm {
  bool chosen = false;
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace = 0;
};

struct ConvPlan {
  ConvShape shape{};
  int out_h = 0, out_w = 0;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvAlgorithm forward, backward_data, backward_filter;

  ConvPlan() = default;
  ~ConvPlan();
  ConvPlan(const ConvPlan &) = delete;
  ConvPlan &operator=(const ConvPlan &) = delete;
};

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// The plan of shape (created on first use).
int conv_plan(dpt_backend_context &c, const ConvShape &shape, const Error &e, ConvPlan *&plan);

// Chooses the direction's algorithm (once), sets its math type on the descriptor and makes the workspace
// large enough; *algorithm is then ready to run.
int prepare_algorithm(dpt_backend_context &c, ConvPlan &plan, ConvDirection direction, const Error &e,
                      const ConvAlgorithm *&algorithm);

}  // namespace dpt::cuda
