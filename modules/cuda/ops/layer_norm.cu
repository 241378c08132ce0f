// "layer_norm": each row (the last dimension d of a sample; n * size / d rows) normalised by its own mean and
// biased variance, then scaled and shifted per feature: the CPU kernel's formulas, in double.
//
// Orders of the sums (launch.cuh: fixed shapes, no atomics; each depends on d and the row count only):
//  * forward and dx: one block per row (rows taken grid-stride), of row_threads(d) threads; thread t adds the
//    elements t, t + T, ... of the row in double, then block_sum's fixed tree. Two passes, as the CPU: the
//    mean, then the sum of (x - mean)^2. saved: float mean and 1/sqrt(var + eps) of each row.
//  * dW and db: the rows are cut into chunks (param_chunks: a function of rows and d); a block of 32 x 8
//    threads takes 32 features of one chunk, thread (f, k) adds the chunk's rows k, k + 8, ... of its feature
//    in double, and a fixed tree adds the 8 partial sums; the chunk's sums go to the context's scratch. Then
//    one thread per feature adds the chunks' sums in chunk order and adds float(sum) into dW (db).
//    The CPU adds float(dy * xhat) into dW row by row in float: the results differ by the CPU's float
//    rounding (the test's bound is (rows + 4) * 2^-24 of the sum of magnitudes).
#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

// Threads of a row's block: a power of two, about the row's width, 32 .. kOpThreads.
unsigned row_threads(size_t d) {
  unsigned t = kWarp;
  while (t < unsigned(kOpThreads) && t < d) t *= 2;
  return t;
}

__global__ void forward_kernel(const float *__restrict__ x, const float *__restrict__ w,
                               const float *__restrict__ b, float *__restrict__ y, float *__restrict__ saved,
                               size_t rows, size_t d, double eps) {
  __shared__ double part[kOpThreads];
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * d;
    double sum = 0.0;
    for (size_t i = threadIdx.x; i < d; i += blockDim.x) sum += double(xr[i]);
    const double mean = block_sum(sum, part) / double(d);
    double squares = 0.0;
    for (size_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double v = double(xr[i]) - mean;
      squares += v * v;
    }
    const double inv_std = 1.0 / sqrt(block_sum(squares, part) / double(d) + eps);
    float *yr = y + r * d;
    for (size_t i = threadIdx.x; i < d; i += blockDim.x)
      yr[i] = float((double(xr[i]) - mean) * inv_std * double(w[i]) + double(b[i]));
    if (threadIdx.x == 0) {
      saved[2 * r] = float(mean);
      saved[2 * r + 1] = float(inv_std);
    }
  }
}

// dx = inv_std * (gh - sum(gh) / d - xhat * sum(gh * xhat) / d), gh = dy * w.
__global__ void input_grad_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                  const float *__restrict__ w, const float *__restrict__ saved,
                                  float *__restrict__ dx, size_t rows, size_t d) {
  __shared__ double part[kOpThreads];
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * d, *g = dy + r * d;
    const double mean = saved[2 * r], inv_std = saved[2 * r + 1];
    double a = 0.0, b = 0.0;
    for (size_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double xhat = (double(xr[i]) - mean) * inv_std, gh = double(g[i]) * double(w[i]);
      a += gh;
      b += gh * xhat;
    }
    const double sum_g = block_sum(a, part), sum_gx = block_sum(b, part);
    for (size_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double xhat = (double(xr[i]) - mean) * inv_std, gh = double(g[i]) * double(w[i]);
      dx[r * d + i] = float(inv_std * (gh - sum_g / double(d) - xhat * sum_gx / double(d)));
    }
  }
}

constexpr unsigned kFeatures = 32, kLanes = 8;  // the parameter gradients' blocks: 32 features x 8 lanes

// Chunk k of the rows is [k * per_chunk, min(rows, (k + 1) * per_chunk)); at most 256 chunks, at least 64
// rows each where there are enough, and at most 2^20 / d of them (2^20 partial sums of each kind).
void param_chunks(size_t rows, size_t d, size_t &chunks, size_t &per_chunk) {
  size_t most = (size_t(1) << 20) / d;
  most = most < 1 ? 1 : (most > 256 ? 256 : most);
  chunks = (rows + 63) / 64;
  chunks = chunks < 1 ? 1 : (chunks > most ? most : chunks);
  per_chunk = (rows + chunks - 1) / chunks;
}

__global__ void param_partials_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                      const float *__restrict__ saved, double *__restrict__ partial_w,
                                      double *__restrict__ partial_b, size_t rows, size_t d,
                                      size_t per_chunk) {
  __shared__ double sw[kLanes][kFeatures], sb[kLanes][kFeatures];
  const unsigned f = threadIdx.x, k = threadIdx.y;
  const size_t i = size_t(blockIdx.x) * kFeatures + f, chunk = blockIdx.y;
  const size_t first = chunk * per_chunk, end = first + per_chunk < rows ? first + per_chunk : rows;
  double a = 0.0, b = 0.0;
  if (i < d)
    for (size_t r = first + k; r < end; r += kLanes) {
      const double mean = saved[2 * r], inv_std = saved[2 * r + 1];
      const double g = dy[r * d + i], xhat = (double(x[r * d + i]) - mean) * inv_std;
      a += g * xhat;
      b += g;
    }
  sw[k][f] = a;
  sb[k][f] = b;
  __syncthreads();
  for (unsigned half = kLanes / 2; half > 0; half /= 2) {
    if (k < half) {
      sw[k][f] = sw[k][f] + sw[k + half][f];
      sb[k][f] = sb[k][f] + sb[k + half][f];
    }
    __syncthreads();
  }
  if (k == 0 && i < d) {
    partial_w[chunk * d + i] = sw[0][f];
    partial_b[chunk * d + i] = sb[0][f];
  }
}

__global__ void param_finish_kernel(const double *__restrict__ partial_w,
                                    const double *__restrict__ partial_b, float *__restrict__ dw,
                                    float *__restrict__ db, size_t d, size_t chunks) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < d; i += size_t(gridDim.x) * blockDim.x) {
    double a = 0.0, b = 0.0;
    for (size_t k = 0; k < chunks; ++k) {
      a += partial_w[k * d + i];
      b += partial_b[k * d + i];
    }
    if (dw != nullptr) dw[i] = __fadd_rn(dw[i], float(a));
    if (db != nullptr) db[i] = __fadd_rn(db[i], float(b));
  }
}

struct Shape {
  size_t rows, d;
};

// The output has the input's dims; weight and bias [d]; eps (reals[0]) positive; saved holds 2 floats a row.
int shape_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
             Shape &s) {
  const dpt_tensor &x = call.inputs[0], &y = call.output, &w = call.params[0], &b = call.params[1];
  const int64_t d = x.dims[x.rank - 1];
  if (!same_dims(x, y) || !has_dims(w, {d}) || !has_dims(b, {d}))
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s, weight %s, bias %s)",
                        dims_text(x).text, dims_text(y).text, dims_text(w).text, dims_text(b).text);
  if (!(call.reals[0] > 0.0))
    return invalid_call(c, call, pass, e, "reals[0] (eps) is %g: it must be positive", call.reals[0]);
  s.d = size_t(d);
  s.rows = size_t(call.n) * (size_t(dpt_tensor_sample_size(&x)) / s.d);
  if (s.rows > 0 && call.saved_bytes < 2 * s.rows * sizeof(float))
    return invalid_call(c, call, pass, e, "saved_bytes %zu (2 floats for each of %zu rows: %zu)",
                        call.saved_bytes, s.rows, 2 * s.rows * sizeof(float));
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Shape s{};
  if (const int rc = shape_of(c, call, kForward, e, s)) return rc;
  if (s.rows == 0) return 0;
  const float *x = input(call), *w = param(call, 0), *b = param(call, 1);
  float *y = output(call), *saved = static_cast<float *>(call.saved);
  if (const int rc = require(c, call, kForward, e,
                             {{"inputs[0].data", x},
                              {"params[0].data (weight)", w},
                              {"params[1].data (bias)", b},
                              {"output.data", y},
                              {"saved", saved}}))
    return rc;
  forward_kernel<<<grid_for(s.rows, 1, 65535), row_threads(s.d), 0, c.stream>>>(x, w, b, y, saved, s.rows,
                                                                                s.d, call.reals[0]);
  return check_launch(c, "layer_norm forward kernel", e);
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Shape s{};
  if (const int rc = shape_of(c, call, kBackward, e, s)) return rc;
  float *dw = param_grad(call, 0), *db = param_grad(call, 1), *dx = input_grad(call);
  if (s.rows == 0 || (dw == nullptr && db == nullptr && dx == nullptr)) return 0;
  const float *x = input(call), *dy = output_grad(call), *saved = static_cast<const float *>(call.saved);
  if (const int rc =
          require(c, call, kBackward, e, {{"inputs[0].data", x}, {"output_grad", dy}, {"saved", saved}}))
    return rc;
  if (dx != nullptr) {
    const float *w = param(call, 0);
    if (const int rc = require(c, call, kBackward, e, {{"params[0].data (weight)", w}})) return rc;
    input_grad_kernel<<<grid_for(s.rows, 1, 65535), row_threads(s.d), 0, c.stream>>>(x, dy, w, saved, dx,
                                                                                     s.rows, s.d);
    if (const int rc = check_launch(c, "layer_norm input gradient kernel", e)) return rc;
  }
  if (dw == nullptr && db == nullptr) return 0;
  size_t chunks = 0, per_chunk = 0;
  param_chunks(s.rows, s.d, chunks, per_chunk);
  if (const int rc = ensure_scratch(c, 2 * chunks * s.d * sizeof(double), e)) return rc;
  double *partial_w = static_cast<double *>(c.scratch), *partial_b = partial_w + chunks * s.d;
  const size_t feature_blocks = (s.d + kFeatures - 1) / kFeatures;
  if (feature_blocks > size_t(INT32_MAX))
    return invalid_call(c, call, kBackward, e, "rows of %zu features: too wide", s.d);
  param_partials_kernel<<<dim3(unsigned(feature_blocks), unsigned(chunks)), dim3(kFeatures, kLanes), 0,
                          c.stream>>>(x, dy, saved, partial_w, partial_b, s.rows, s.d, per_chunk);
  if (const int rc = check_launch(c, "layer_norm parameter gradient kernel", e)) return rc;
  param_finish_kernel<<<grid_for(s.d), kOpThreads, 0, c.stream>>>(partial_w, partial_b, dw, db, s.d, chunks);
  return check_launch(c, "layer_norm parameter gradient sum kernel", e);
}

}  // namespace

extern const OpKernel kLayerNorm = {"layer_norm", 1, 1, 2, 2, forward, backward};

}  // namespace dpt::cuda
