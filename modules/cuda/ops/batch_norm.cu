// "batch_norm": per channel (dimension 0) over the samples and pixels of the batch, in two phases per
// training pass so that the executor can combine the statistics of every replica in between (op_call.h), and
// one phase in evaluation (the running statistics). The CPU kernel's formulas, in double, term for term (the
// files of ops/ are compiled without contraction); the module's own kernels, not cuDNN's batch
// normalisation, whose backward is not documented as deterministic.
//
// Orders of the sums (launch.cuh: fixed shapes, no atomics, a function of the slice's sizes only, so that a
// slice's statistics depend on its data alone, on every run and every replica):
//  * the STATISTICS phases: one block of kOpThreads threads per channel (channels taken grid-stride); thread
//    t adds the channel's elements t, t + kOpThreads, ... (sample-major, then pixel) in double, then
//    block_sum's fixed tree. The CPU adds the same elements in plain order: the doubles may differ in their
//    last bits.
//  * everything else is per channel (one thread each) or per element: no sums.
// Statistics, saved and the per-channel coefficients are doubles in device memory; the coefficients
// (scale and shift, or the backward's five) are computed once per channel into the context's scratch.
#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

struct Shape {
  size_t channels, pixels, samples;
};

// The loops of the per-channel (one thread each) and per-element kernels: grid-stride.
__device__ inline size_t first_index() {
  return size_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline size_t index_stride() {
  return size_t(gridDim.x) * blockDim.x;
}

// One thread's elements of one channel, in order: j = first, first + blockDim.x, ... < samples * pixels, as
// (sample, pixel) = (j / pixels, j % pixels), stepped without a division.
struct Walk {
  size_t sample, pixel, step_samples, step_pixels, pixels;
  __device__ Walk(const Shape &s, size_t first)
      : sample(first / s.pixels),
        pixel(first % s.pixels),
        step_samples(blockDim.x / s.pixels),
        step_pixels(blockDim.x % s.pixels),
        pixels(s.pixels) {}
  __device__ void next() {
    sample += step_samples;
    pixel += step_pixels;
    if (pixel >= pixels) {
      pixel -= pixels;
      ++sample;
    }
  }
};

// statistics[0, 2c] = per channel sum of x, sum of x^2; statistics[2c] = the element count (also for n = 0).
__global__ void statistics_kernel(const float *__restrict__ x, Shape s, double *__restrict__ statistics) {
  __shared__ double part[kOpThreads];
  for (size_t ch = blockIdx.x; ch < s.channels; ch += gridDim.x) {
    double a = 0.0, b = 0.0;
    // Element j = i * pixels + p of the channel, j = t, t + blockDim.x, ... (stepped without dividing)
    for (Walk w(s, threadIdx.x); w.sample < s.samples; w.next()) {
      const double v = x[(w.sample * s.channels + ch) * s.pixels + w.pixel];
      a += v;
      b += v * v;
    }
    a = block_sum(a, part);
    b = block_sum(b, part);
    if (threadIdx.x == 0) {
      statistics[ch] = a;
      statistics[s.channels + ch] = b;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) statistics[2 * s.channels] = double(s.samples * s.pixels);
}

// Forward APPLY, per channel: saved = {mean, 1/sqrt(var + eps), count} from the local or the global sums;
// the running statistics from the global ones (not where they are not finite: a discarded step keeps them);
// and, when coefficients is not NULL, coefficients = {scale, shift} per channel for normalize_kernel.
__global__ void prepare_kernel(const double *__restrict__ statistics, size_t channels, int sync, double eps,
                               double momentum, double *__restrict__ saved, float *__restrict__ running_mean,
                               float *__restrict__ running_var, const float *__restrict__ w,
                               const float *__restrict__ b, double *__restrict__ coefficients) {
  const size_t stride = 2 * channels + 1;
  const double *global = statistics + stride, *use = sync != 0 ? global : statistics;
  const double count = use[2 * channels], n_all = global[2 * channels];
  for (size_t ch = first_index(); ch < channels; ch += index_stride()) {
    const double mean = count > 0 ? use[ch] / count : 0.0;
    const double spread = count > 0 ? use[channels + ch] / count - mean * mean : 0.0;
    const double var = spread < 0.0 ? 0.0 : spread;  // std::max(spread, 0.0): NaN stays NaN
    const double inv_std = 1.0 / sqrt(var + eps);
    saved[ch] = mean;
    saved[channels + ch] = inv_std;
    if (ch == 0) saved[2 * channels] = count;
    if (coefficients != nullptr) {
      const double scale = inv_std * double(w[ch]), shift = double(b[ch]) - mean * scale;
      coefficients[2 * ch] = scale;
      coefficients[2 * ch + 1] = shift;
    }
    if (n_all <= 0) continue;
    const double global_mean = global[ch] / n_all;
    const double global_spread = global[channels + ch] / n_all - global_mean * global_mean;
    const double global_var = global_spread < 0.0 ? 0.0 : global_spread;
    const double unbiased = n_all > 1 ? global_var * n_all / (n_all - 1) : global_var;
    if (!isfinite(global_mean) || !isfinite(unbiased)) continue;
    running_mean[ch] = float((1.0 - momentum) * double(running_mean[ch]) + momentum * global_mean);
    running_var[ch] = float((1.0 - momentum) * double(running_var[ch]) + momentum * unbiased);
  }
}

// Evaluation, per channel: {scale, shift} from the running statistics.
__global__ void evaluation_coefficients_kernel(const float *__restrict__ running_mean,
                                               const float *__restrict__ running_var,
                                               const float *__restrict__ w, const float *__restrict__ b,
                                               size_t channels, double eps,
                                               double *__restrict__ coefficients) {
  for (size_t ch = first_index(); ch < channels; ch += index_stride()) {
    const double scale = double(w[ch]) / sqrt(double(running_var[ch]) + eps);
    coefficients[2 * ch] = scale;
    coefficients[2 * ch + 1] = double(b[ch]) - double(running_mean[ch]) * scale;
  }
}

// y = float(x * scale + shift) per element (I: the index type, launch.cuh).
template <class I>
__global__ void normalize_kernel(const float *__restrict__ x, const double *__restrict__ coefficients,
                                 I total, I channels, I pixels, float *__restrict__ y) {
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += I(gridDim.x) * blockDim.x) {
    const I ch = (k / pixels) % channels;
    y[k] = float(double(x[k]) * coefficients[2 * ch] + coefficients[2 * ch + 1]);
  }
}

// Backward STATISTICS: statistics[0, 2c] = per channel sum of dy, sum of dy * xhat; statistics[2c] = the
// element count (also for n = 0); db += float(sum dy), dW += float(sum dy * xhat) where not NULL.
__global__ void gradient_statistics_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                           const double *__restrict__ saved, Shape s,
                                           double *__restrict__ statistics, float *__restrict__ dw,
                                           float *__restrict__ db) {
  __shared__ double part[kOpThreads];
  for (size_t ch = blockIdx.x; ch < s.channels; ch += gridDim.x) {
    const double mean = saved[ch], inv_std = saved[s.channels + ch];
    double a = 0.0, b = 0.0;
    for (Walk w(s, threadIdx.x); w.sample < s.samples; w.next()) {
      const size_t at = (w.sample * s.channels + ch) * s.pixels + w.pixel;
      const double g = dy[at], xhat = (double(x[at]) - mean) * inv_std;
      a += g;
      b += g * xhat;
    }
    a = block_sum(a, part);
    b = block_sum(b, part);
    if (threadIdx.x == 0) {
      statistics[ch] = a;
      statistics[s.channels + ch] = b;
      if (dw != nullptr) dw[ch] = __fadd_rn(dw[ch], float(b));
      if (db != nullptr) db[ch] = __fadd_rn(db[ch], float(a));
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) statistics[2 * s.channels] = double(s.samples * s.pixels);
}

// Backward APPLY, per channel: {mean, inv_std, sum(dy) / N, sum(dy * xhat) / N, weight * inv_std}, N the
// count forward used.
__global__ void gradient_coefficients_kernel(const double *__restrict__ saved,
                                             const double *__restrict__ statistics,
                                             const float *__restrict__ w, size_t channels,
                                             double *__restrict__ coefficients) {
  const double count = saved[2 * channels];
  for (size_t ch = first_index(); ch < channels; ch += index_stride()) {
    double *k = coefficients + 5 * ch;
    k[0] = saved[ch];
    k[1] = saved[channels + ch];
    k[2] = statistics[ch] / count;
    k[3] = statistics[channels + ch] / count;
    k[4] = double(w[ch]) * saved[channels + ch];
  }
}

// dx = weight * inv_std * (dy - sum(dy) / N - xhat * sum(dy * xhat) / N) per element.
template <class I>
__global__ void input_gradient_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                      const double *__restrict__ coefficients, I total, I channels, I pixels,
                                      float *__restrict__ dx) {
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += I(gridDim.x) * blockDim.x) {
    const double *q = coefficients + 5 * ((k / pixels) % channels);
    const double xhat = (double(x[k]) - q[0]) * q[1];
    dx[k] = float(q[4] * (double(dy[k]) - q[2] - xhat * q[3]));
  }
}

unsigned channel_grid(size_t channels) {
  return grid_for(channels, 1, 65535);
}

const char *phase_name(int32_t phase) {
  return phase == DPT_OP_PHASE_STATISTICS ? "statistics" : phase == DPT_OP_PHASE_APPLY ? "apply" : "single";
}

// The call's shape and what its phase needs besides the tensors: output of the input's dims; weight and
// bias [c]; two buffers (running mean and variance) [c]; eps positive; a phase of op_call.h; in the training
// phases statistics of 2 * (2c + 1) doubles; saved of 2c + 1 doubles where the phase reads or writes it.
int shape_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, bool two_phase,
             bool uses_saved, const Error &e, Shape &s) {
  const dpt_tensor &x = call.inputs[0], &y = call.output, &w = call.params[0], &b = call.params[1];
  const int64_t channels = x.dims[0];
  if (!same_dims(x, y) || !has_dims(w, {channels}) || !has_dims(b, {channels}))
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s, weight %s, bias %s)",
                        dims_text(x).text, dims_text(y).text, dims_text(w).text, dims_text(b).text);
  if (call.buffer_count != 2)
    return invalid_call(c, call, pass, e, "%d buffers (running_mean and running_var: 2)",
                        int(call.buffer_count));
  for (int i = 0; i < 2; ++i)
    if (call.buffers[i].dtype != DPT_DTYPE_F32 || !has_dims(call.buffers[i], {channels}))
      return invalid_call(c, call, pass, e, "buffers[%d] (%s) is %s of dtype %d (F32 [%lld])", i,
                          i == 0 ? "running_mean" : "running_var", dims_text(call.buffers[i]).text,
                          int(call.buffers[i].dtype), (long long)channels);
  if (!(call.reals[0] > 0.0))
    return invalid_call(c, call, pass, e, "reals[0] (eps) is %g: it must be positive", call.reals[0]);
  if (call.phase != DPT_OP_PHASE_SINGLE && call.phase != DPT_OP_PHASE_STATISTICS &&
      call.phase != DPT_OP_PHASE_APPLY)
    return invalid_call(c, call, pass, e, "phase %d (0 single, 1 statistics, 2 apply)", int(call.phase));
  s = Shape{size_t(channels), size_t(dpt_tensor_sample_size(&x)) / size_t(channels), size_t(call.n)};
  const size_t stride = 2 * s.channels + 1;
  if (two_phase) {
    if (call.statistics == nullptr || call.statistics_count < 2 * stride)
      return invalid_call(c, call, pass, e,
                          "phase %s needs statistics of 2 * (2c + 1) = %zu doubles (%s, %zu)",
                          phase_name(call.phase), 2 * stride, call.statistics == nullptr ? "NULL" : "given",
                          call.statistics_count);
  }
  if (uses_saved && (call.saved == nullptr || call.saved_bytes < stride * sizeof(double)))
    return invalid_call(c, call, pass, e, "phase %s needs saved of 2c + 1 doubles, %zu bytes (%s, %zu)",
                        phase_name(call.phase), stride * sizeof(double),
                        call.saved == nullptr ? "NULL" : "given", call.saved_bytes);
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const bool statistics = call.phase == DPT_OP_PHASE_STATISTICS;
  const bool apply = call.phase == DPT_OP_PHASE_APPLY && call.training != 0;
  Shape s{};
  if (const int rc = shape_of(c, call, kForward, statistics || apply, apply, e, s)) return rc;
  const float *x = input(call), *w = param(call, 0), *b = param(call, 1);
  float *y = output(call);
  float *running_mean = static_cast<float *>(call.buffers[0].data);
  float *running_var = static_cast<float *>(call.buffers[1].data);
  if (s.samples > 0)
    if (const int rc = require(c, call, kForward, e, {{"inputs[0].data", x}, {"output.data", y}})) return rc;
  if (statistics) {
    statistics_kernel<<<channel_grid(s.channels), kOpThreads, 0, c.stream>>>(x, s, call.statistics);
    return check_launch(c, "batch_norm statistics kernel", e);
  }
  if (!apply && s.samples == 0) return 0;  // evaluation of no samples
  if (const int rc = require(
          c, call, kForward, e,
          {{"buffers[0].data (running_mean)", running_mean}, {"buffers[1].data (running_var)", running_var}}))
    return rc;
  double *coefficients = nullptr;
  if (s.samples > 0) {
    if (const int rc =
            require(c, call, kForward, e, {{"params[0].data (weight)", w}, {"params[1].data (bias)", b}}))
      return rc;
    if (const int rc = ensure_scratch(c, 2 * s.channels * sizeof(double), e)) return rc;
    coefficients = static_cast<double *>(c.scratch);
  }
  if (apply) {
    prepare_kernel<<<grid_for(s.channels), kOpThreads, 0, c.stream>>>(
        call.statistics, s.channels, call.sync_statistics, call.reals[0],
        call.statistics_momentum != 0.0 ? call.statistics_momentum : call.reals[1],
        static_cast<double *>(call.saved), running_mean, running_var, w, b, coefficients);
    if (const int rc = check_launch(c, "batch_norm prepare kernel", e)) return rc;
  } else {
    evaluation_coefficients_kernel<<<grid_for(s.channels), kOpThreads, 0, c.stream>>>(
        running_mean, running_var, w, b, s.channels, call.reals[0], coefficients);
    if (const int rc = check_launch(c, "batch_norm evaluation kernel", e)) return rc;
  }
  if (s.samples == 0) return 0;
  const size_t total = s.samples * s.channels * s.pixels;
  if (index_fits_32(total))
    normalize_kernel<uint32_t><<<grid_for(total), kOpThreads, 0, c.stream>>>(
        x, coefficients, uint32_t(total), uint32_t(s.channels), uint32_t(s.pixels), y);
  else
    normalize_kernel<size_t>
        <<<grid_for(total), kOpThreads, 0, c.stream>>>(x, coefficients, total, s.channels, s.pixels, y);
  return check_launch(c, "batch_norm normalize kernel", e);
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Shape s{};
  if (const int rc = shape_of(c, call, kBackward, true, true, e, s)) return rc;
  const float *x = input(call), *dy = output_grad(call);
  const double *saved = static_cast<const double *>(call.saved);
  if (call.phase == DPT_OP_PHASE_STATISTICS) {
    if (s.samples > 0)
      if (const int rc = require(c, call, kBackward, e, {{"inputs[0].data", x}, {"output_grad", dy}}))
        return rc;
    gradient_statistics_kernel<<<channel_grid(s.channels), kOpThreads, 0, c.stream>>>(
        x, dy, saved, s, call.statistics, param_grad(call, 0), param_grad(call, 1));
    return check_launch(c, "batch_norm gradient statistics kernel", e);
  }
  float *dx = input_grad(call);
  if (dx == nullptr || s.samples == 0) return 0;
  const float *w = param(call, 0);
  if (const int rc = require(c, call, kBackward, e,
                             {{"inputs[0].data", x}, {"output_grad", dy}, {"params[0].data (weight)", w}}))
    return rc;
  if (const int rc = ensure_scratch(c, 5 * s.channels * sizeof(double), e)) return rc;
  double *coefficients = static_cast<double *>(c.scratch);
  gradient_coefficients_kernel<<<grid_for(s.channels), kOpThreads, 0, c.stream>>>(saved, call.statistics, w,
                                                                                  s.channels, coefficients);
  if (const int rc = check_launch(c, "batch_norm gradient coefficients kernel", e)) return rc;
  const size_t total = s.samples * s.channels * s.pixels;
  if (index_fits_32(total))
    input_gradient_kernel<uint32_t><<<grid_for(total), kOpThreads, 0, c.stream>>>(
        x, dy, coefficients, uint32_t(total), uint32_t(s.channels), uint32_t(s.pixels), dx);
  else
    input_gradient_kernel<size_t>
        <<<grid_for(total), kOpThreads, 0, c.stream>>>(x, dy, coefficients, total, s.channels, s.pixels, dx);
  return check_launch(c, "batch_norm input gradient kernel", e);
}

}  // namespace

extern const OpKernel kBatchNorm = {"batch_norm", 1, 1, 2, 2, forward, backward};

}  // namespace dpt::cuda
