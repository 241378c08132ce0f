// "conv2d": cross-correlation through cuDNN, x [c, h, w] -> y [out_c, oh, ow], W [out_c, c, k, k] (cuDNN's
// KCRS), an optional bias [out_c]; descriptors and algorithms per shape in the context's plans
// (ops/conv_plan.*). y and dx are written (beta 0), dW and db accumulate (beta 1). With 16-bit inputs
// (dpt_op_call::matmul_dtype bfloat16 or float16) the operands of each convolution are first rounded to the
// type, in float32 copies (ops/matmul.hpp's round_to_dtype), and cuDNN multiplies them on TF32 tensor cores:
// exact products of the rounded values, float32 sums and outputs -- the CPU kernel's policy. (cuDNN's
// 16-bit configurations would round the outputs, and the weight gradient, to 16 bits too.)
#include "cuda/kernels.hpp"
#include "cuda/ops/conv_plan.hpp"
#include "cuda/ops/matmul.hpp"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

int conv_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
            ConvShape &s) {
  const dpt_tensor &x = call.inputs[0], &y = call.output, &w = call.params[0], &b = call.params[1];
  const int64_t out_c = call.ints[0], k = call.ints[1], stride = call.ints[2], padding = call.ints[3];
  bool ok = x.rank == 3 && out_c > 0 && k > 0 && stride > 0 && padding >= 0 && call.n <= INT32_MAX &&
            out_c <= INT32_MAX && k <= INT32_MAX && stride <= INT32_MAX && padding <= INT32_MAX / 4;
  for (int i = 0; ok && i < 3; ++i) ok = x.dims[i] <= INT32_MAX / 4;
  // (64-bit arithmetic: the sums of the checked values cannot overflow)
  ok = ok && k <= x.dims[1] + 2 * padding && k <= x.dims[2] + 2 * padding;
  const int64_t oh = ok ? (x.dims[1] + 2 * padding - k) / stride + 1 : 0;
  const int64_t ow = ok ? (x.dims[2] + 2 * padding - k) / stride + 1 : 0;
  ok = ok && has_dims(y, {out_c, oh, ow}) && has_dims(w, {out_c, x.dims[0], k, k}) &&
       (call.param_count < 2 || has_dims(b, {out_c}));
  if (!ok)
    return invalid_call(c, call, pass, e,
                        "bad shape (n %lld, input %s, output %s, %lld outputs, kernel %lld, stride %lld, "
                        "padding %lld, weight "
                        "%s%s%s)",
                        (long long)call.n, dims_text(x).text, dims_text(y).text, (long long)out_c,
                        (long long)k, (long long)stride, (long long)padding, dims_text(w).text,
                        call.param_count > 1 ? ", bias " : "", call.param_count > 1 ? dims_text(b).text : "");
  s = ConvShape{int32_t(call.n), int32_t(x.dims[0]), int32_t(x.dims[1]), int32_t(x.dims[2]), int32_t(out_c),
                int32_t(k),      int32_t(stride),    int32_t(padding),   call.matmul_dtype};
  return 0;
}

// The convolution's operands as it multiplies them: themselves in float32; with 16-bit inputs, copies
// rounded to the type in the context's operand buffer (each of x, w, dy that is not nullptr).
struct Operands {
  const float *x, *w, *dy;
};

int operands(dpt_backend_context &c, const ConvShape &s, const ConvPlan &p, Operands in, const Error &e,
             Operands &out) {
  out = in;
  if (s.matmul_dtype == DPT_DTYPE_F32) return 0;
  const size_t counts[3] = {size_t(s.n) * size_t(s.in_c) * size_t(s.in_h) * size_t(s.in_w),
                            size_t(s.out_c) * size_t(s.in_c) * size_t(s.kernel) * size_t(s.kernel),
                            size_t(s.n) * size_t(s.out_c) * size_t(p.out_h) * size_t(p.out_w)};
  const float *sources[3] = {in.x, in.w, in.dy};
  size_t offsets[3], bytes = 0;
  for (int i = 0; i < 3; ++i) {
    offsets[i] = bytes;
    if (sources[i] != nullptr) bytes += (counts[i] * sizeof(float) + 255) / 256 * 256;
  }
  // Grown once, before any copy is written (growing frees the old buffer).
  if (const int rc = ensure_operands(c, bytes, e)) return rc;
  const float *rounded[3] = {};
  for (int i = 0; i < 3; ++i) {
    if (sources[i] == nullptr) continue;
    float *copy = reinterpret_cast<float *>(static_cast<char *>(c.operands) + offsets[i]);
    if (const int rc = round_to_dtype(c, s.matmul_dtype, sources[i], copy, counts[i], e)) return rc;
    rounded[i] = copy;
  }
  out = Operands{rounded[0], rounded[1], rounded[2]};
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  ConvShape s{};
  if (const int rc = conv_of(c, call, kForward, e, s)) return rc;
  if (s.n == 0) return 0;  // (cuDNN refuses empty tensors)
  const float *x = input(call), *w = param(call, 0), *b = param(call, 1);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e,
                             {{"inputs[0].data", x}, {"params[0].data (weight)", w}, {"output.data", y}}))
    return rc;
  ConvPlan *p = nullptr;
  if (const int rc = conv_plan(c, s, e, p)) return rc;
  const ConvAlgorithm *a = nullptr;
  if (const int rc = prepare_algorithm(c, *p, ConvDirection::kForward, e, a)) return rc;
  Operands in{};
  if (const int rc = operands(c, s, *p, {x, w, nullptr}, e, in)) return rc;
  DPT_CUDNN("cudnnConvolutionForward", cudnnConvolutionForward(c.dnn, &kOne, p->x, in.x, p->w, in.w, p->conv,
                                                               cudnnConvolutionFwdAlgo_t(a->algo),
                                                               c.workspace, a->workspace, &kZero, p->y, y));
  if (b != nullptr) DPT_CUDNN("cudnnAddTensor", cudnnAddTensor(c.dnn, &kOne, p->bias, b, &kOne, p->y, y));
  return 0;
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  ConvShape s{};
  if (const int rc = conv_of(c, call, kBackward, e, s)) return rc;
  float *dw = param_grad(call, 0), *db = param_grad(call, 1), *dx = input_grad(call);
  if (s.n == 0 || (dw == nullptr && db == nullptr && dx == nullptr)) return 0;
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output_grad", dy}})) return rc;
  ConvPlan *p = nullptr;
  if (const int rc = conv_plan(c, s, e, p)) return rc;
  const float *w = dx != nullptr ? param(call, 0) : nullptr, *x = dw != nullptr ? input(call) : nullptr;
  if (dx != nullptr)
    if (const int rc = require(c, call, kBackward, e, {{"params[0].data (weight)", w}})) return rc;
  if (dw != nullptr)
    if (const int rc = require(c, call, kBackward, e, {{"inputs[0].data", x}})) return rc;
  Operands in{};  // (rounded once for both directions)
  if (dx != nullptr || dw != nullptr)
    if (const int rc = operands(c, s, *p, {x, w, dy}, e, in)) return rc;
  if (dx != nullptr) {
    const ConvAlgorithm *a = nullptr;
    if (const int rc = prepare_algorithm(c, *p, ConvDirection::kBackwardData, e, a)) return rc;
    DPT_CUDNN("cudnnConvolutionBackwardData",
              cudnnConvolutionBackwardData(c.dnn, &kOne, p->w, in.w, p->y, in.dy, p->conv,
                                           cudnnConvolutionBwdDataAlgo_t(a->algo), c.workspace, a->workspace,
                                           &kZero, p->x, dx));
  }
  if (dw != nullptr) {
    const ConvAlgorithm *a = nullptr;
    if (const int rc = prepare_algorithm(c, *p, ConvDirection::kBackwardFilter, e, a)) return rc;
    DPT_CUDNN("cudnnConvolutionBackwardFilter",
              cudnnConvolutionBackwardFilter(c.dnn, &kOne, p->x, in.x, p->y, in.dy, p->conv,
                                             cudnnConvolutionBwdFilterAlgo_t(a->algo), c.workspace,
                                             a->workspace, &kOne, p->w, dw));
  }
  if (db != nullptr) {
    // cuDNN does not document cudnnConvolutionBackwardBias as deterministic: deterministic mode uses the
    // module's fixed-order reduction instead.
    if (c.deterministic())
      return launch_bias_grad(c, size_t(s.n), size_t(s.out_c), size_t(p->out_h) * size_t(p->out_w), dy, db,
                              e);
    DPT_CUDNN("cudnnConvolutionBackwardBias",
              cudnnConvolutionBackwardBias(c.dnn, &kOne, p->y, dy, &kOne, p->bias, db));
  }
  return 0;
}

}  // namespace

extern const OpKernel kConv2d = {"conv2d", 1, 1, 1, 2, forward, backward};

}  // namespace dpt::cuda
