// The CPU reference (src/backend/cpu/ops/softmax_cross_entropy.cpp), one warp per sample: the first
// maximum zmax, the sum of exp(z - zmax) in double, loss = log(sum) - (z[label] - zmax) in double, the
// gradient float(exp(z - zmax) / sum) minus 1 at the label; a row labelled DPT_BACKEND_IGNORE_LABEL gets
// loss 0 and a zero gradient. The losses are then summed by one block in a
// fixed order. exp and log are interface/op_math.hpp's, the CPU kernel's.
#include <cmath>

#include "cuda/kernels.hpp"
#include "cuda/loss.hpp"
#include "interface/op_math.hpp"

namespace dpt::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;  // 8 samples per block at a time

__global__ void per_sample_kernel(const float *logits, const int32_t *labels, size_t n, int classes,
                                  float *dlogits, double *loss, unsigned *correct) {
  const unsigned all = 0xffffffffu;
  const int lane = int(threadIdx.x) % kWarp;
  const size_t warps = size_t(gridDim.x) * (kThreads / kWarp);
  for (size_t s = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; s < n; s += warps) {
    const float *z = logits + s * size_t(classes);
    // First maximum: each lane keeps its first (strictly greater), then the lanes agree on the larger value,
    // on a tie the smaller index.
    int best = lane < classes ? lane : 0;
    for (int k = lane + kWarp; k < classes; k += kWarp)
      if (z[k] > z[best]) best = k;
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const int other = __shfl_xor_sync(all, best, offset);
      if (z[other] > z[best] || (z[other] == z[best] && other < best)) best = other;
    }
    const double zmax = z[best];
    // A butterfly of fixed shape: every lane ends with the same sum, the same bits on every run.
    double sum = 0.0;
    for (int k = lane; k < classes; k += kWarp) sum += op_math::exp_double(double(z[k]) - zmax);
    for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(all, sum, offset);
    const int32_t label = labels[s];
    const bool ignored = label == DPT_BACKEND_IGNORE_LABEL;
    const bool valid = label >= 0 && label < classes;
    if (lane == 0) {
      loss[s] = ignored ? 0.0 : valid ? op_math::log_double(sum) - (double(z[label]) - zmax) : nan("");
      correct[s] = valid && best == label ? 1u : 0u;
    }
    if (dlogits != nullptr) {
      float *d = dlogits + s * size_t(classes);
      for (int k = lane; k < classes; k += kWarp) {
        const float p = ignored ? 0.0f : float(op_math::exp_double(double(z[k]) - zmax) / sum);
        d[k] = k == label ? __fsub_rn(p, 1.0f) : p;
      }
    }
  }
}

// One block: thread t adds the samples t, t + kThreads, ..., then a fixed tree adds the threads' sums.
__global__ void sum_kernel(const double *loss, const unsigned *correct, size_t n, dpt_backend_loss *out) {
  __shared__ double loss_part[kThreads];
  __shared__ unsigned long long correct_part[kThreads];
  double l = 0.0;
  unsigned long long c = 0;
  for (size_t i = threadIdx.x; i < n; i += kThreads) {
    l += loss[i];
    c += correct[i];
  }
  loss_part[threadIdx.x] = l;
  correct_part[threadIdx.x] = c;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      loss_part[threadIdx.x] += loss_part[threadIdx.x + half];
      correct_part[threadIdx.x] += correct_part[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out->loss_sum = loss_part[0];
    out->correct = correct_part[0];
  }
}

}  // namespace

int softmax_cross_entropy(dpt_backend_context *ctx, size_t n, size_t classes, const float *logits,
                          const int32_t *labels, float *dlogits, dpt_backend_loss *out, char *error,
                          size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "softmax_cross_entropy", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (classes == 0 || !fit_int(classes) || n > (size_t(1) << 40))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: softmax_cross_entropy: bad shape (n %zu, classes %zu)", ordinal, n, classes);
    if (out == nullptr || (n > 0 && (logits == nullptr || labels == nullptr)))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: softmax_cross_entropy: NULL pointer",
                    ordinal);
    if (n == 0) {
      DPT_CUDA("cudaMemsetAsync", cudaMemsetAsync(out, 0, sizeof *out, c.stream));
      return 0;
    }
    // Scratch: the per-sample losses (double), then the per-sample correct flags.
    if (const int rc = ensure_scratch(c, n * (sizeof(double) + sizeof(unsigned)), e)) return rc;
    double *loss = static_cast<double *>(c.scratch);
    unsigned *correct = reinterpret_cast<unsigned *>(loss + n);
    const size_t blocks = (n + kThreads / kWarp - 1) / (kThreads / kWarp);
    per_sample_kernel<<<unsigned(blocks < 65535 ? blocks : 65535), kThreads, 0, c.stream>>>(
        logits, labels, n, int(classes), dlogits, loss, correct);
    if (const int rc = check_launch(c, "softmax_cross_entropy per-sample kernel", e)) return rc;
    sum_kernel<<<1, kThreads, 0, c.stream>>>(loss, correct, n, out);
    return check_launch(c, "softmax_cross_entropy sum kernel", e);
  });
}

}  // namespace dpt::cuda
