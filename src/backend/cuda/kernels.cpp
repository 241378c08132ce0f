#include "backend/cuda/kernels.hpp"

#include "core/error.hpp"
#include "optim/optimizer.hpp"

namespace dpt {

namespace {

constexpr size_t kResultsBytes = 256;  // a dpt_backend_loss, then the norm at kNormOffset
constexpr size_t kNormOffset = 128;
static_assert(sizeof(dpt_backend_loss) <= kNormOffset);
static_assert(kNormBlock == DPT_BACKEND_NORM_BLOCK, "the module's norm blocks are the core's");

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

void CudaKernels::check_supported(const char *op, DType dtype, DType matmul_dtype) const {
  if (api_.op_supported(op, int32_t(dtype), int32_t(matmul_dtype)) == 0)
    throw_error(DPT_ERROR_UNSUPPORTED,
                "cuda:" + std::to_string(ordinal_) + ": " + op +
                    (matmul_dtype != DType::kF32 && api_.op_supported(op, int32_t(dtype), DPT_DTYPE_F32) != 0
                         ? (matmul_dtype == DType::kBF16 ? " with bfloat16 matrix products (precision bf16)"
                                                         : " with float16 matrix products (precision fp16)")
                         : "") +
                    " does not run on CUDA devices in this version (train on CPU devices)");
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

void CudaKernels::copy_device(float *dst, const float *src, size_t count) {
  if (count != 0) check(api_.copy_device(ctx_, dst, src, count * sizeof(float), error_, sizeof error_));
}

void CudaKernels::copy_device_ahead(float *dst, const float *src, size_t count) {
  if (count != 0) check(api_.copy_device_ahead(ctx_, dst, src, count * sizeof(float), error_, sizeof error_));
}

void CudaKernels::join_copies_ahead() {
  check(api_.copy_join_ahead(ctx_, error_, sizeof error_));
}

void CudaKernels::copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) {
  if (count != 0)
    check(api_.copy_to_device(ctx_, device, host, count * sizeof(int32_t), error_, sizeof error_));
}

void CudaKernels::forward(const dpt_op_call &call) {
  if (call.n != 0 || call.phase != DPT_OP_PHASE_SINGLE)
    check(api_.op_forward(ctx_, &call, error_, sizeof error_));
}

void CudaKernels::backward(const dpt_op_call &call) {
  if (call.n != 0 || call.phase != DPT_OP_PHASE_SINGLE)
    check(api_.op_backward(ctx_, &call, error_, sizeof error_));
}

void CudaKernels::accumulate(float *y, const float *x, size_t count) {
  if (count != 0) check(api_.accumulate(ctx_, y, x, count, error_, sizeof error_));
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

// The caller's host array outlives the copy: a trainer's member (norm_blocks_), waited for here.
void CudaKernels::l2_block_sums(const float *range, size_t begin, size_t end, double *sums) {
  if (end <= begin) return;
  const size_t bytes = ((end - 1) / kNormBlock - begin / kNormBlock + 1) * sizeof(double);
  if (bytes > block_sums_bytes_) {
    if (block_sums_ != nullptr) check(api_.mem_free(ctx_, block_sums_, error_, sizeof error_));
    block_sums_ = nullptr;
    block_sums_bytes_ = 0;
    check(api_.mem_alloc(ctx_, bytes, &block_sums_, error_, sizeof error_));
    block_sums_bytes_ = bytes;
  }
  check(
      api_.l2_block_sums(ctx_, range, begin, end, static_cast<double *>(block_sums_), error_, sizeof error_));
  check(api_.copy_to_host(ctx_, sums, block_sums_, bytes, error_, sizeof error_));
  synchronize();
}

void CudaKernels::scale(float *x, size_t count, float alpha) {
  if (count != 0) check(api_.scale(ctx_, x, count, alpha, error_, sizeof error_));
}

void CudaKernels::narrow(const float *x, void *out, size_t count, DType dtype) {
  if (count != 0)
    check(api_.convert(ctx_, out, int32_t(dtype), x, DPT_DTYPE_F32, count, error_, sizeof error_));
}

void CudaKernels::widen(const void *in, float *x, size_t count, DType dtype) {
  if (count != 0)
    check(api_.convert(ctx_, x, DPT_DTYPE_F32, in, int32_t(dtype), count, error_, sizeof error_));
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
