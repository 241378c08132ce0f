#include "cuda/ops/conv_plan.hpp"

namespace dpt::cuda {

ConvPlan::~ConvPlan() {
  if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  if (w != nullptr) cudnnDestroyFilterDescriptor(w);
  if (bias != nullptr) cudnnDestroyTensorDescriptor(bias);
  if (y != nullptr) cudnnDestroyTensorDescriptor(y);
  if (x != nullptr) cudnnDestroyTensorDescriptor(x);
}

namespace {

const char *direction_name(ConvDirection d) {
  switch (d) {
    case ConvDirection::kForward:
      return "forward";
    case ConvDirection::kBackwardData:
      return "backward data";
    default:
      return "backward filter";
  }
}

int create_plan(dpt_backend_context &c, const ConvShape &s, ConvPlan &p, const Error &e) {
  const int ordinal = c.ordinal;
  p.shape = s;
  p.out_h = (s.in_h + 2 * s.padding - s.kernel) / s.stride + 1;
  p.out_w = (s.in_w + 2 * s.padding - s.kernel) / s.stride + 1;
  DPT_CUDNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&p.x));
  DPT_CUDNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&p.y));
  DPT_CUDNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&p.bias));
  DPT_CUDNN("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&p.w));
  DPT_CUDNN("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(&p.conv));
  DPT_CUDNN("cudnnSetTensor4dDescriptor", cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                                     s.n, s.in_c, s.in_h, s.in_w));
  DPT_CUDNN("cudnnSetTensor4dDescriptor", cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                                     s.n, s.out_c, p.out_h, p.out_w));
  DPT_CUDNN("cudnnSetTensor4dDescriptor",
            cudnnSetTensor4dDescriptor(p.bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, s.out_c, 1, 1));
  // The op's weights [out_c, in_c, k, k] are cuDNN's KCRS filter layout.
  DPT_CUDNN("cudnnSetFilter4dDescriptor", cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                                     s.out_c, s.in_c, s.kernel, s.kernel));
  // Cross-correlation (no kernel flip), as the CPU kernel's im2col + GEMM.
  DPT_CUDNN("cudnnSetConvolution2dDescriptor",
            cudnnSetConvolution2dDescriptor(p.conv, s.padding, s.padding, s.stride, s.stride, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  int n = 0, ch = 0, h = 0, w = 0;
  DPT_CUDNN("cudnnGetConvolution2dForwardOutputDim",
            cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &n, &ch, &h, &w));
  if (n != s.n || ch != s.out_c || h != p.out_h || w != p.out_w)
    return report(e, DPT_BACKEND_ERROR,
                  "cuda:%d: cudnnGetConvolution2dForwardOutputDim: %dx%dx%dx%d, expected %dx%dx%dx%d",
                  ordinal, n, ch, h, w, s.n, s.out_c, p.out_h, p.out_w);
  return 0;
}

bool uses_tensor_cores(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

bool may_convert_to_float16(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Whether an algorithm multiplies the operands themselves (explicit or implicit GEMM, direct), rather than
// their FFT or Winograd transforms, whose rounding (to TF32 under tensor-op math) adds its own error.
bool multiplies_operands(ConvDirection d, int algo) {
  switch (d) {
    case ConvDirection::kForward:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
    case ConvDirection::kBackwardData:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    default:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
  }
}

// The first usable entry of a cuDNN result list (sorted best first). workspace(algo, &bytes) asks cuDNN for
// the workspace of an algorithm under the math type just set on the descriptor.
template <class Perf, class Workspace>
bool pick(dpt_backend_context &c, ConvPlan &p, ConvDirection d, const Perf *perf, int count,
          Workspace workspace, ConvAlgorithm &out) {
  for (int i = 0; i < count; ++i) {
    const Perf &r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    // Deterministic mode also keeps to algorithms that multiply the operands: the float32 summation noise
    // of a GEMM keeps K replicas within the equivalence contract of one, where the heuristics' first
    // deterministic algorithms did not (the first GPU run: 1.8e-5 against 1e-5; 1.3e-6 so, 8e-7 timed).
    if (c.deterministic() && (r.determinism != CUDNN_DETERMINISTIC || !multiplies_operands(d, int(r.algo))))
      continue;
    const bool tensor_ops = p.shape.tensor_ops(c);
    if ((!tensor_ops && uses_tensor_cores(r.mathType)) || may_convert_to_float16(r.mathType)) continue;
    // Without TF32 the descriptor keeps CUDNN_FMA_MATH: on A100 and later CUDNN_DEFAULT_MATH permits TF32.
    const cudnnMathType_t math = tensor_ops ? r.mathType : CUDNN_FMA_MATH;
    if (cudnnSetConvolutionMathType(p.conv, math) != CUDNN_STATUS_SUCCESS) continue;
    size_t bytes = 0;
    if (workspace(r.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > c.workspace_limit) continue;
    out = ConvAlgorithm{true, int(r.algo), math, bytes};
    return true;
  }
  return false;
}

int choose(dpt_backend_context &c, ConvPlan &p, ConvDirection d, const Error &e, ConvAlgorithm &out) {
  const int ordinal = c.ordinal;
  const bool heuristic = c.deterministic();
  DPT_CUDNN("cudnnSetConvolutionMathType",
            cudnnSetConvolutionMathType(p.conv, p.shape.tensor_ops(c) ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int count = 0;
  bool found = false;
  if (d == ConvDirection::kForward) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    if (heuristic)
      DPT_CUDNN("cudnnGetConvolutionForwardAlgorithm_v7",
                cudnnGetConvolutionForwardAlgorithm_v7(c.dnn, p.x, p.w, p.conv, p.y,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
    else
      DPT_CUDNN("cudnnFindConvolutionForwardAlgorithm",
                cudnnFindConvolutionForwardAlgorithm(c.dnn, p.x, p.w, p.conv, p.y,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
    found = pick(
        c, p, d, perf, count,
        [&](cudnnConvolutionFwdAlgo_t a, size_t *bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(c.dnn, p.x, p.w, p.conv, p.y, a, bytes);
        },
        out);
  } else if (d == ConvDirection::kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    if (heuristic)
      DPT_CUDNN("cudnnGetConvolutionBackwardDataAlgorithm_v7",
                cudnnGetConvolutionBackwardDataAlgorithm_v7(
                    c.dnn, p.w, p.y, p.conv, p.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
    else
      DPT_CUDNN("cudnnFindConvolutionBackwardDataAlgorithm",
                cudnnFindConvolutionBackwardDataAlgorithm(
                    c.dnn, p.w, p.y, p.conv, p.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
    found = pick(
        c, p, d, perf, count,
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t *bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(c.dnn, p.w, p.y, p.conv, p.x, a, bytes);
        },
        out);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    if (heuristic)
      DPT_CUDNN("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                    c.dnn, p.x, p.y, p.conv, p.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
    else
      DPT_CUDNN("cudnnFindConvolutionBackwardFilterAlgorithm",
                cudnnFindConvolutionBackwardFilterAlgorithm(
                    c.dnn, p.x, p.y, p.conv, p.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
    found = pick(
        c, p, d, perf, count,
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t *bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(c.dnn, p.x, p.y, p.conv, p.w, a, bytes);
        },
        out);
  }
  if (!found)
    return report(e, DPT_BACKEND_ERROR,
                  "cuda:%d: conv2d %s: no cuDNN algorithm of %d fits (%s, %s, workspace limit %llu bytes)",
                  ordinal, direction_name(d), count, c.deterministic() ? "deterministic" : "any determinism",
                  p.shape.tensor_ops(c) ? "TF32 allowed" : "FP32 only",
                  (unsigned long long)c.workspace_limit);
  return 0;
}

}  // namespace

int conv_plan(dpt_backend_context &c, const ConvShape &s, const Error &e, ConvPlan *&plan) {
  plan = nullptr;
  const ConvKey key{s.n, s.in_c, s.in_h, s.in_w, s.out_c, s.kernel, s.stride, s.padding, s.matmul_dtype};
  auto it = c.conv_plans.find(key);
  if (it == c.conv_plans.end()) {
    auto p = std::make_unique<ConvPlan>();
    if (const int rc = create_plan(c, s, *p, e)) return rc;
    it = c.conv_plans.emplace(key, std::move(p)).first;
  }
  plan = it->second.get();
  return 0;
}

int prepare_algorithm(dpt_backend_context &c, ConvPlan &p, ConvDirection d, const Error &e,
                      const ConvAlgorithm *&algorithm) {
  const int ordinal = c.ordinal;
  ConvAlgorithm &a = d == ConvDirection::kForward        ? p.forward
                     : d == ConvDirection::kBackwardData ? p.backward_data
                                                         : p.backward_filter;
  if (!a.chosen)
    if (const int rc = choose(c, p, d, e, a)) return rc;
  DPT_CUDNN("cudnnSetConvolutionMathType", cudnnSetConvolutionMathType(p.conv, a.math));
  if (const int rc = ensure_workspace(c, a.workspace, e)) return rc;
  algorithm = &a;
  return 0;
}

}  // namespace dpt::cuda
