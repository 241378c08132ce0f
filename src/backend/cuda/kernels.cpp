#include "backend/cuda/kernels.hpp"

#include "core/error.hpp"

namespace dpt {

namespace {

constexpr size_t kResultsBytes = 256;  // a dpt_backend_loss, then the norm at kNormOffset
constexpr size_t kNormOffset = 128;
static_assert(sizeof(dpt_backend_loss) <= kNormOffset);

dpt_backend_conv2d_shape conv_shape(const LayerSpec &s, size_t n) {
  return {int32_t(n),       int32_t(s.in.c),   int32_t(s.in.h),   int32_t(s.in.w),
          int32_t(s.units), int32_t(s.kernel), int32_t(s.stride), int32_t(s.padding)};
}

dpt_backend_pool_shape pool_shape(const LayerSpec &s, size_t n) {
  return {s.kind == LayerKind::kMaxPool ? DPT_BACKEND_POOL_MAX : DPT_BACKEND_POOL_AVERAGE,
          int32_t(n),
          int32_t(s.in.c),
          int32_t(s.in.h),
          int32_t(s.in.w),
          int32_t(s.kernel),
          int32_t(s.stride)};
}

int activation_kind(LayerKind kind) {
  return kind == LayerKind::kRelu      ? DPT_BACKEND_RELU
         : kind == LayerKind::kSigmoid ? DPT_BACKEND_SIGMOID
                                       : DPT_BACKEND_TANH;
}

}  // namespace

void throw_backend_error(int rc, const char *message) {
  const dpt_status status = rc == DPT_BACKEND_ERROR_OUT_OF_MEMORY   ? DPT_ERROR_OUT_OF_MEMORY
                            : rc == DPT_BACKEND_ERROR_COMMUNICATION ? DPT_ERROR_COMMUNICATION
                                                                    : DPT_ERROR_DEVICE;
  throw_error(status, message);
}

CudaKernels::CudaKernels(const dpt_backend_v2 &api, int ordinal, const KernelOptions &options)
    : api_(api), ordinal_(ordinal) {
  dpt_backend_context_options o{};
  o.struct_size = sizeof o;
  o.flags = (options.allow_tf32 ? DPT_BACKEND_ALLOW_TF32 : 0u) |
            (options.deterministic ? DPT_BACKEND_DETERMINISTIC : 0u);
  check(api_.context_create(ordinal, &o, &ctx_, error_, sizeof error_));
  const int rc = api_.mem_alloc(ctx_, kResultsBytes, &results_, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) {
    api_.context_destroy(ctx_);
    throw_backend_error(rc, error_);
  }
}

CudaKernels::~CudaKernels() {
  api_.context_destroy(ctx_);  // waits for the stream, frees every allocation
}

void CudaKernels::check(int rc) {
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void *CudaKernels::allocate(size_t bytes) {
  void *p = nullptr;
  check(api_.mem_alloc(ctx_, bytes == 0 ? 1 : bytes, &p, error_, sizeof error_));
  return p;
}

void CudaKernels::release(void *p, size_t) {
  // A failure here (a broken device) cannot be reported from a destructor; context_destroy frees it.
  if (p != nullptr) api_.mem_free(ctx_, p, error_, sizeof error_);
}

void CudaKernels::zero(void *p, size_t bytes) {
  if (bytes != 0) check(api_.mem_set(ctx_, p, 0, bytes, error_, sizeof error_));
}

void CudaKernels::check_supported(const LayerSpec &spec) const {
  if (spec.kind == LayerKind::kDropout)
    throw_error(DPT_ERROR_UNSUPPORTED,
                "cuda:" + std::to_string(ordinal_) +
                    ": dropout layers do not run on CUDA devices in this version (train on CPU devices)");
}

void CudaKernels::copy_to_device(float *device, const float *host, size_t count) {
  if (count != 0)
    check(api_.copy_to_device(ctx_, device, host, count * sizeof(float), error_, sizeof error_));
}

void CudaKernels::copy_to_host(float *host, const float *device, size_t count) {
  if (count != 0) check(api_.copy_to_host(ctx_, host, device, count * sizeof(float), error_, sizeof error_));
}

void CudaKernels::synchronize() {
  check(api_.context_synchronize(ctx_, error_, sizeof error_));
}

void CudaKernels::copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) {
  if (count != 0)
    check(api_.copy_to_device(ctx_, device, host, count * sizeof(int32_t), error_, sizeof error_));
}

void CudaKernels::forward(const Layer &layer, const float *params, const float *x, float *y, float *, float *,
                          const PassInfo &info) {
  const LayerSpec &s = layer.spec();
  const size_t n = info.n;
  if (n == 0) return;
  switch (s.kind) {
    case LayerKind::kDense:
      check(api_.dense_forward(ctx_, n, s.in.size(), s.units, x, params, params + s.weights(), y, error_,
                               sizeof error_));
      break;
    case LayerKind::kConv2d: {
      const dpt_backend_conv2d_shape shape = conv_shape(s, n);
      check(api_.conv2d_forward(ctx_, &shape, x, params, params + s.weights(), y, error_, sizeof error_));
      break;
    }
    case LayerKind::kAvgPool:
    case LayerKind::kMaxPool: {
      const dpt_backend_pool_shape shape = pool_shape(s, n);
      check(api_.pool_forward(ctx_, &shape, x, y, error_, sizeof error_));
      break;
    }
    case LayerKind::kRelu:
    case LayerKind::kSigmoid:
    case LayerKind::kTanh:
      check(api_.activation_forward(ctx_, activation_kind(s.kind), n * s.out.size(), x, y, error_,
                                    sizeof error_));
      break;
    case LayerKind::kFlatten:
      break;  // a view: the network aliases the buffers
    case LayerKind::kDropout:
      check_supported(s);
  }
}

void CudaKernels::backward(const Layer &layer, const float *params, const float *x, const float *y,
                           const float *dy, float *dx, float *dparams, const float *, float *,
                           const PassInfo &info) {
  const LayerSpec &s = layer.spec();
  const size_t n = info.n;
  if (n == 0) return;
  switch (s.kind) {
    case LayerKind::kDense:
      check(api_.dense_backward(ctx_, n, s.in.size(), s.units, x, params, dy, dx, dparams,
                                dparams + s.weights(), error_, sizeof error_));
      break;
    case LayerKind::kConv2d: {
      const dpt_backend_conv2d_shape shape = conv_shape(s, n);
      check(api_.conv2d_backward_filter(ctx_, &shape, x, dy, dparams, error_, sizeof error_));
      check(api_.conv2d_backward_bias(ctx_, &shape, dy, dparams + s.weights(), error_, sizeof error_));
      if (dx != nullptr)
        check(api_.conv2d_backward_data(ctx_, &shape, params, dy, dx, error_, sizeof error_));
      break;
    }
    case LayerKind::kAvgPool:
    case LayerKind::kMaxPool: {
      if (dx == nullptr) break;
      const dpt_backend_pool_shape shape = pool_shape(s, n);
      check(api_.pool_backward(ctx_, &shape, x, y, dy, dx, error_, sizeof error_));
      break;
    }
    case LayerKind::kRelu:
    case LayerKind::kSigmoid:
    case LayerKind::kTanh:
      if (dx == nullptr) break;
      check(api_.activation_backward(ctx_, activation_kind(s.kind), n * s.out.size(), x, y, dy, dx, error_,
                                     sizeof error_));
      break;
    case LayerKind::kFlatten:
      break;
    case LayerKind::kDropout:
      check_supported(s);
  }
}

LossStats CudaKernels::loss(const float *logits, const int32_t *labels, size_t n, size_t classes,
                            float *dlogits) {
  host_loss_ = {};
  if (n != 0) {
    check(api_.softmax_cross_entropy(ctx_, n, classes, logits, labels, dlogits,
                                     static_cast<dpt_backend_loss *>(results_), error_, sizeof error_));
    check(api_.copy_to_host(ctx_, &host_loss_, results_, sizeof host_loss_, error_, sizeof error_));
    synchronize();
  }
  return LossStats{host_loss_.loss_sum, host_loss_.correct};
}

double CudaKernels::l2_norm(const float *grads, size_t count) {
  host_norm_ = 0;
  if (count == 0) return host_norm_;
  double *device_norm = reinterpret_cast<double *>(static_cast<char *>(results_) + kNormOffset);
  check(api_.l2_norm(ctx_, grads, count, device_norm, error_, sizeof error_));
  check(api_.copy_to_host(ctx_, &host_norm_, device_norm, sizeof host_norm_, error_, sizeof error_));
  synchronize();
  return host_norm_;
}

void CudaKernels::apply_update(const OptimizerConfig &config, uint64_t t, float lr, float grad_scale,
                               float *params, const float *grads, float *state, size_t count) {
  dpt_backend_optimizer o{};
  o.kind = config.kind == OptimizerKind::kAdamW ? DPT_BACKEND_ADAMW : DPT_BACKEND_SGD;
  o.nesterov = config.nesterov ? 1 : 0;
  o.momentum = config.momentum;
  o.weight_decay = config.weight_decay;
  o.beta1 = config.beta1;
  o.beta2 = config.beta2;
  o.epsilon = config.epsilon;
  check(
      api_.optimizer_update(ctx_, &o, t, lr, grad_scale, params, grads, state, count, error_, sizeof error_));
}

}  // namespace dpt
