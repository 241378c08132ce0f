// The loss and optimizer members: softmax_cross_entropy (the CPU reference's,
// dpt::cpu::softmax_cross_entropy, its result written into device memory), optimizer_update and l2_norm
// (the core's optimizer, src/optim/optimizer.cpp, compiled into the module; the norm a
// double in device memory) and scale. Compiled with -ffp-contract=off (CMakeLists.txt): every operation is
// rounded on its own, as the real module's explicitly rounded kernels and the CPU build on x86-64 do.
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "optim/optimizer.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

// The CPU's loss, one sample at a time so that a label outside [0, classes) gives the interface's NaN loss
// (the CPU kernel needs valid labels; DPT_BACKEND_IGNORE_LABEL it takes: no loss, a zero row). The losses
// are added in sample order from 0.0 as the CPU kernel adds them, so the sum has its bits. An invalid
// label's sample runs with one more class whose logit is -inf (probability 0, never the first maximum) as
// its label: its dlogits are then softmax(z) with no -1.
dpt_backend_loss cpu_loss(size_t n, size_t classes, const float *logits, const int32_t *labels,
                          float *dlogits) {
  dpt_backend_loss total{0.0, 0};
  std::vector<float> row, drow;
  for (size_t s = 0; s < n; ++s) {
    const float *z = logits + s * classes;
    float *d = dlogits != nullptr ? dlogits + s * classes : nullptr;
    const int32_t label = labels[s];
    if ((label >= 0 && size_t(label) < classes) || label == DPT_BACKEND_IGNORE_LABEL) {
      const dpt::cpu::LossStats one = dpt::cpu::softmax_cross_entropy(z, &label, 1, classes, d);
      total.loss_sum += one.loss_sum;
      total.correct += one.correct;
      continue;
    }
    row.assign(z, z + classes);
    row.push_back(-std::numeric_limits<float>::infinity());
    drow.resize(classes + 1);
    const int32_t extra = int32_t(classes);
    dpt::cpu::softmax_cross_entropy(row.data(), &extra, 1, classes + 1, d != nullptr ? drow.data() : nullptr);
    if (d != nullptr) std::memcpy(d, drow.data(), classes * sizeof(float));
    total.loss_sum += std::nan("");
  }
  return total;
}

// ---- the CPU optimizer (src/optim/optimizer.cpp, compiled into the module: CMakeLists.txt) ----

void update(const dpt_backend_optimizer &o, uint64_t t, float lr, float scale, float *p, const float *g,
            float *state, size_t n) {
  dpt::OptimizerConfig c;
  c.kind = o.kind == DPT_BACKEND_ADAMW ? dpt::OptimizerKind::kAdamW : dpt::OptimizerKind::kSgd;
  c.nesterov = o.nesterov != 0;
  c.momentum = o.momentum;
  c.weight_decay = o.weight_decay;
  c.beta1 = o.beta1;
  c.beta2 = o.beta2;
  c.epsilon = o.epsilon;
  dpt::apply_update(c, t, lr, scale, p, g, state, n);
}

double euclidean_norm(const float *x, size_t count) {
  return dpt::l2_norm(x, count);
}

void scale_by(float *x, size_t count, float alpha) {
  for (size_t i = 0; i < count; ++i) x[i] *= alpha;
}

}  // namespace

int softmax_cross_entropy(dpt_backend_context *ctx, size_t n, size_t classes, const float *logits,
                          const int32_t *labels, float *dlogits, dpt_backend_loss *out, char *error,
                          size_t error_size) {
  const Error e{error, error_size};
  const char *call = "softmax_cross_entropy";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (classes == 0 || classes > size_t(INT_MAX) || n > (size_t(1) << 40))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: bad shape (n %zu, classes %zu)",
                    c.ordinal, call, n, classes);
    Span so;
    if (int rc = resolve(c, call, "out", out, sizeof(dpt_backend_loss), alignof(dpt_backend_loss),
                         Where::kContextDevice, false, so, e))
      return rc;
    if (n == 0)
      return enqueue(c, call, {so}, [so] {
        const dpt_backend_loss zero{0.0, 0};
        std::memcpy(so.host, &zero, sizeof zero);
      });
    size_t zs = 0, ls = 0;
    if (!product({n, classes}, zs) || !checked_bytes(n, sizeof(int32_t), ls))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: sizes overflow", c.ordinal, call);
    Span sz, sl, sdz;
    if (int rc = floats(c, call, "logits", logits, zs, false, sz, e)) return rc;
    if (int rc =
            resolve(c, call, "labels", labels, ls, alignof(int32_t), Where::kContextDevice, false, sl, e))
      return rc;
    if (int rc = floats(c, call, "dlogits", dlogits, zs, true, sdz, e)) return rc;
    return enqueue(c, call, {sz, sl, sdz, so}, [=] {
      const dpt_backend_loss loss =
          cpu_loss(n, classes, sz.f(), reinterpret_cast<const int32_t *>(sl.host), sdz ? sdz.f() : nullptr);
      std::memcpy(so.host, &loss, sizeof loss);
    });
  });
}

int optimizer_update(dpt_backend_context *ctx, const dpt_backend_optimizer *optimizer, uint64_t t, float lr,
                     float grad_scale, float *params, const float *grads, float *state, size_t count,
                     char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "optimizer_update";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (optimizer == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL pointer (optimizer)", c.ordinal,
                    call);
    const dpt_backend_optimizer o = *optimizer;
    if (o.kind != DPT_BACKEND_SGD && o.kind != DPT_BACKEND_ADAMW)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: unknown optimizer %d", c.ordinal,
                    call, int(o.kind));
    if (count == 0) return 0;
    // State: SGD with momentum count floats, AdamW 2 * count (m, then v); plain SGD none.
    const size_t state_floats = o.kind == DPT_BACKEND_ADAMW ? 2 : (o.momentum != 0.0f ? 1 : 0);
    size_t ss = 0;
    if (!product({state_floats, count}, ss))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: sizes overflow", c.ordinal, call);
    Span sp, sg, sst;
    if (int rc = floats(c, call, "params", params, count, false, sp, e)) return rc;
    if (int rc = floats(c, call, "grads", grads, count, false, sg, e)) return rc;
    if (state_floats > 0)
      if (int rc = floats(c, call, "state", state, ss, false, sst, e)) return rc;
    return enqueue(c, call, {sp, sg, sst},
                   [=] { update(o, t, lr, grad_scale, sp.f(), sg.f(), sst ? sst.f() : nullptr, count); });
  });
}

int l2_norm(dpt_backend_context *ctx, const float *x, size_t count, double *out, char *error,
            size_t error_size) {
  const Error e{error, error_size};
  const char *call = "l2_norm";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    Span so, sx;
    if (int rc = resolve(c, call, "out", out, sizeof(double), alignof(double), Where::kContextDevice, false,
                         so, e))
      return rc;
    if (count > 0)
      if (int rc = floats(c, call, "x", x, count, false, sx, e)) return rc;
    return enqueue(c, call, {sx, so}, [=] {
      const double norm = count > 0 ? euclidean_norm(sx.f(), count) : 0.0;
      std::memcpy(so.host, &norm, sizeof norm);
    });
  });
}

int l2_block_sums(dpt_backend_context *ctx, const float *x, size_t begin, size_t end, double *sums,
                  char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "l2_block_sums";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (end <= begin) return 0;
    const size_t blocks = (end - 1) / dpt::kNormBlock - begin / dpt::kNormBlock + 1;
    Span sx, ss;
    if (int rc = floats(c, call, "x", x, end - begin, false, sx, e)) return rc;
    if (int rc = resolve(c, call, "sums", sums, blocks * sizeof(double), alignof(double),
                         Where::kContextDevice, false, ss, e))
      return rc;
    return enqueue(c, call, {sx, ss},
                   [=] { dpt::l2_block_sums(sx.f(), begin, end, reinterpret_cast<double *>(ss.host)); });
  });
}

int scale(dpt_backend_context *ctx, float *x, size_t count, float alpha, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "scale";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (count == 0) return 0;
    Span sx;
    if (int rc = floats(c, call, "x", x, count, false, sx, e)) return rc;
    return enqueue(c, call, {sx}, [=] { scale_by(sx.f(), count, alpha); });
  });
}

}  // namespace dpt_sim
