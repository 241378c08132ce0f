// The CUDA module's loss, optimizer and gradient kernels against the core's own CPU code:
// softmax_cross_entropy and accumulate (the CPU reference kernels, src/backend/cpu/ops), apply_update and
// l2_norm (src/optim), scale, and convert (src/core/float16.hpp's roundings). Random inputs from fixed
// seeds.
//
// Tolerances:
//  * loss sum: rel 1e-10. Both compute each sample's loss in double from the same floats; only the last
//    bits of double exp/log (CUDA's vs glibc's, ~1 ulp) and the order of the double sum differ (~1e-16).
//  * correct count: exact (the first maximum, ties included).
//  * dlogits: abs 1.2e-7. Each is float(exp(z - zmax) / sum) in double on both sides, rounded once to
//    float; when the double values differ in their last bit the float can round the other way: at most
//    one float ulp of a probability <= 1, i.e. 6e-8, doubled for safety.
//  * optimizer updates (SGD, momentum, Nesterov, weight decay, AdamW): bitwise. The kernels perform the
//    CPU's operations in the CPU's order with explicitly rounded intrinsics (no fused multiply-add) and the
//    step constants are computed on the host as on the CPU, so every result is the same IEEE value. (A host
//    build that contracts a * b + c into an FMA, e.g. with -march=native, would break this.)
//  * l2_norm and l2_block_sums: bitwise (backend ABI 7: the core's blocks, lanes and order, each product and
//    sum rounded on its own), also on a second run. scale, accumulate: bitwise (one multiplication or
//    addition each).
//  * convert: bitwise the core's to_bf16 / to_f16 and back (the module restates them in float16.cuh), on
//    values chosen where roundings differ: ties, float32 subnormals, float16's overflow and subnormals,
//    NaNs with payloads, infinities, signed zeros, and random values over 80 binades.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/float16.hpp"
#include "cuda_harness.hpp"
#include "optim/optimizer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

using cuda_test::check;
using cuda_test::expect_bitwise;
using cuda_test::expect_close;
using cuda_test::Gpu;
using cuda_test::uniform;

// ---- softmax cross-entropy
// ----------------------------------------------------------------------------------

void check_loss(Gpu &gpu, size_t n, size_t classes, const std::vector<float> &logits, uint64_t seed) {
  print_message("softmax cross-entropy n %zu, %zu classes\n", n, classes);
  const std::vector<float> pick = uniform(n, seed, 0.0f, 1.0f);
  std::vector<int32_t> labels(n);
  for (size_t s = 0; s < n; ++s)
    labels[s] = int32_t(std::min<size_t>(classes - 1, size_t(pick[s] * float(classes))));
  std::vector<float> dlogits(n * classes);
  const dpt::cpu::LossStats cpu =
      dpt::cpu::softmax_cross_entropy(logits.data(), labels.data(), n, classes, dlogits.data());

  const dpt_backend_v2 &api = gpu.api();
  const float *z = gpu.upload(logits);
  const int32_t *l = gpu.upload(labels);
  float *dz = gpu.upload(std::vector<float>(n * classes, NAN));
  auto *out = static_cast<dpt_backend_loss *>(gpu.alloc(sizeof(dpt_backend_loss)));
  check(api.softmax_cross_entropy(gpu.ctx(), n, classes, z, l, dz, out, gpu.error, sizeof gpu.error),
        "softmax_cross_entropy", gpu.error);
  dpt_backend_loss got;
  gpu.download_bytes(&got, out, sizeof got);
  print_message("loss sum %.17g (CPU %.17g), correct %llu (CPU %llu)\n", got.loss_sum, cpu.loss_sum,
                (unsigned long long)got.correct, (unsigned long long)cpu.correct);
  assert_true(std::fabs(got.loss_sum - cpu.loss_sum) <= 1e-10 * std::fabs(cpu.loss_sum));
  assert_int_equal(got.correct, cpu.correct);
  expect_close("dlogits", gpu.download(dz, n * classes), dlogits, nullptr, 0.0, 1.2e-7);
  // Without the gradient: the same loss, the same bits (a fixed-order sum).
  dpt_backend_loss again;
  check(api.softmax_cross_entropy(gpu.ctx(), n, classes, z, l, nullptr, out, gpu.error, sizeof gpu.error),
        "softmax_cross_entropy(no gradient)", gpu.error);
  gpu.download_bytes(&again, out, sizeof again);
  assert_memory_equal(&again, &got, sizeof got);
}

void test_gpu_softmax_cross_entropy(void **) {
  Gpu gpu;
  check_loss(gpu, 300, 10, uniform(300 * 10, 800, -4.0f, 4.0f), 801);
  check_loss(gpu, 37, 1000, uniform(37 * 1000, 802, -8.0f, 8.0f), 803);  // many classes per lane
  check_loss(gpu, 1, 1, {0.5f}, 804);
  // Ties: integer logits 0..3 over 10 classes; "correct" needs the FIRST maximum to be the label.
  std::vector<float> ties = uniform(500 * 10, 805, 0.0f, 4.0f);
  for (float &v : ties) v = std::floor(v);
  check_loss(gpu, 500, 10, ties, 806);
  // Zero samples: a zero loss and count.
  auto *out = static_cast<dpt_backend_loss *>(gpu.alloc(sizeof(dpt_backend_loss)));
  check(gpu.api().softmax_cross_entropy(gpu.ctx(), 0, 10, nullptr, nullptr, nullptr, out, gpu.error,
                                        sizeof gpu.error),
        "softmax_cross_entropy(n 0)", gpu.error);
  dpt_backend_loss empty;
  gpu.download_bytes(&empty, out, sizeof empty);
  assert_true(empty.loss_sum == 0.0 && empty.correct == 0);
}

// ---- optimizers -----------------------------------------------------------------------------------------

void check_optimizer(const char *name, const dpt::OptimizerConfig &config, uint64_t seed) {
  const size_t count = 10007;
  const size_t state_count = dpt::state_floats_per_parameter(config) * count;
  std::vector<float> params = uniform(count, seed, -1.0f, 1.0f), state(state_count, 0.0f);
  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  float *p = gpu.upload(params);
  float *st = gpu.upload(std::vector<float>(std::max<size_t>(state_count, 1), 0.0f));
  const dpt_backend_optimizer o = {
      config.kind == dpt::OptimizerKind::kAdamW ? DPT_BACKEND_ADAMW : DPT_BACKEND_SGD,
      config.nesterov ? 1 : 0,
      config.momentum,
      config.weight_decay,
      config.beta1,
      config.beta2,
      config.epsilon};
  for (uint64_t t = 0; t < 4; ++t) {
    const std::vector<float> grads = uniform(count, seed + 1 + t, -8.0f, 8.0f);
    const float lr = float(dpt::learning_rate_at(config, t)), grad_scale = 1.0f / 32.0f;
    dpt::apply_update(config, t, lr, grad_scale, params.data(), grads.data(), state.data(), count);
    const float *g = gpu.upload(grads);
    check(api.optimizer_update(gpu.ctx(), &o, t, lr, grad_scale, p, g, state_count > 0 ? st : nullptr, count,
                               gpu.error, sizeof gpu.error),
          "optimizer_update", gpu.error);
  }
  print_message("%s, 4 updates:\n", name);
  expect_bitwise("  parameters", gpu.download(p, count), params);
  if (state_count > 0) expect_bitwise("  optimizer state", gpu.download(st, state_count), state);
}

void test_gpu_sgd(void **) {
  dpt::OptimizerConfig c;
  c.learning_rate = 0.05f;
  check_optimizer("SGD", c, 900);
  c.weight_decay = 1e-2f;
  c.momentum = 0.9f;
  check_optimizer("SGD, momentum 0.9, weight decay 1e-2", c, 910);
  c.nesterov = true;
  c.weight_decay = 5e-4f;
  check_optimizer("SGD, Nesterov momentum 0.9, weight decay 5e-4", c, 920);
}

void test_gpu_adamw(void **) {
  dpt::OptimizerConfig c;
  c.kind = dpt::OptimizerKind::kAdamW;
  c.learning_rate = 1e-3f;
  c.weight_decay = 0.01f;
  check_optimizer("AdamW, weight decay 0.01", c, 930);
  c.beta1 = 0.5f;
  c.beta2 = 0.9f;
  c.epsilon = 1e-6f;
  c.weight_decay = 0.0f;
  check_optimizer("AdamW, betas 0.5 0.9, epsilon 1e-6", c, 940);
}

// ---- norm and scale
// -----------------------------------------------------------------------------------------

void test_gpu_l2_norm_and_scale(void **) {
  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  auto *out = static_cast<double *>(gpu.alloc(sizeof(double)));
  for (const size_t count : {size_t(0), size_t(1), size_t(1000), (size_t(1) << 20) + 3}) {
    const std::vector<float> x = uniform(count, 1000 + count, -3.0f, 3.0f);
    const float *xd = gpu.upload(x);
    double norms[2];
    for (double &norm : norms) {
      check(api.l2_norm(gpu.ctx(), xd, count, out, gpu.error, sizeof gpu.error), "l2_norm", gpu.error);
      gpu.download_bytes(&norm, out, sizeof norm);
    }
    const double cpu = dpt::l2_norm(x.data(), count);
    print_message("l2_norm of %zu: %.17g (CPU %.17g)\n", count, norms[0], cpu);
    assert_memory_equal(&norms[0], &cpu, sizeof(double));
    assert_memory_equal(&norms[0], &norms[1], sizeof(double));
  }
  // The block sums of ranges: aligned on blocks (a ZeRO range), inside one block, and across blocks from
  // and to the middle of one (a pipeline stage's range).
  const size_t n = 5 * dpt::kNormBlock + 77;
  const std::vector<float> v = uniform(n, 1050, -3.0f, 3.0f);
  const float *vd = gpu.upload(v);
  auto *sums = static_cast<double *>(gpu.alloc(8 * sizeof(double)));
  for (const auto &[begin, end] : {std::pair<size_t, size_t>{0, n},
                                   {dpt::kNormBlock, 3 * dpt::kNormBlock},
                                   {5, 700},
                                   {dpt::kNormBlock - 3, 4 * dpt::kNormBlock + 9},
                                   {n - 1, n}}) {
    const size_t blocks = (end - 1) / dpt::kNormBlock - begin / dpt::kNormBlock + 1;
    check(api.l2_block_sums(gpu.ctx(), vd + begin, begin, end, sums, gpu.error, sizeof gpu.error),
          "l2_block_sums", gpu.error);
    std::vector<double> got(blocks), want(blocks);
    gpu.download_bytes(got.data(), sums, blocks * sizeof(double));
    dpt::l2_block_sums(v.data() + begin, begin, end, want.data());
    print_message("l2_block_sums [%zu, %zu): %zu blocks\n", begin, end, blocks);
    assert_memory_equal(got.data(), want.data(), blocks * sizeof(double));
  }
  const std::vector<float> x = uniform(100003, 1100, -3.0f, 3.0f);
  float *xd = gpu.upload(x);
  const float alpha = 1.0f / 3.0f;
  check(api.scale(gpu.ctx(), xd, x.size(), alpha, gpu.error, sizeof gpu.error), "scale", gpu.error);
  std::vector<float> want = x;
  for (float &v : want) v *= alpha;
  expect_bitwise("scale by 1/3", gpu.download(xd, x.size()), want);
}

// ---- accumulate
// ---------------------------------------------------------------------------------------------

// y += x, as dpt::cpu::accumulate; with zero elements (no pointers needed); y and x must not overlap.
void test_gpu_accumulate(void **) {
  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  for (const size_t count : {size_t(1), size_t(1000), (size_t(1) << 20) + 3}) {
    const std::vector<float> y0 = uniform(count, 1200 + count, -3.0f, 3.0f);
    const std::vector<float> x = uniform(count, 1300 + count, -3.0f, 3.0f);
    float *yd = gpu.upload(y0);
    const float *xd = gpu.upload(x);
    check(api.accumulate(gpu.ctx(), yd, xd, count, gpu.error, sizeof gpu.error), "accumulate", gpu.error);
    std::vector<float> want = y0;
    dpt::cpu::accumulate(want.data(), x.data(), count);
    expect_bitwise("accumulate", gpu.download(yd, count), want);
  }
  check(api.accumulate(gpu.ctx(), nullptr, nullptr, 0, gpu.error, sizeof gpu.error), "accumulate(0)",
        gpu.error);
  float *yd = gpu.upload(std::vector<float>{1.0f});
  assert_int_equal(api.accumulate(gpu.ctx(), yd, nullptr, 1, gpu.error, sizeof gpu.error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  assert_non_null(std::strstr(gpu.error, "accumulate"));
}

// ---- convert
// ------------------------------------------------------------------------------------------------

std::vector<float> conversion_values() {
  std::vector<float> v;
  for (const uint32_t bits : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x3F808000u,
                              0x3F818000u, 0x3F808001u, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00001u,
                              0x7F800123u, 0xFFA00000u, 0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x33800000u,
                              0x33000000u, 0x33000001u, 0x38800000u, 0x387FC000u}) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    v.push_back(f);
  }
  const std::vector<float> r = uniform(4096, 1400, -1.0f, 1.0f);
  for (size_t i = 0; i < r.size(); ++i) v.push_back(std::ldexp(r[i], int(i % 80) - 40));
  return v;
}

void test_gpu_convert(void **) {
  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  const std::vector<float> x = conversion_values();
  const float *xd = gpu.upload(x);
  auto *halves = static_cast<uint16_t *>(gpu.alloc(x.size() * sizeof(uint16_t)));
  float *back = static_cast<float *>(gpu.alloc(x.size() * sizeof(float)));
  for (const int32_t type : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    const bool bf16 = type == DPT_DTYPE_BF16;
    check(api.convert(gpu.ctx(), halves, type, xd, DPT_DTYPE_F32, x.size(), gpu.error, sizeof gpu.error),
          "convert", gpu.error);
    std::vector<uint16_t> got(x.size()), want(x.size());
    gpu.download_bytes(got.data(), halves, got.size() * sizeof(uint16_t));
    for (size_t i = 0; i < x.size(); ++i) want[i] = bf16 ? dpt::to_bf16(x[i]) : dpt::to_f16(x[i]);
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += got[i] != want[i];
    print_message("convert to %s: %zu of %zu values differ from the core's\n", bf16 ? "bf16" : "fp16", differ,
                  x.size());
    assert_int_equal(differ, 0);
    check(api.convert(gpu.ctx(), back, DPT_DTYPE_F32, halves, type, x.size(), gpu.error, sizeof gpu.error),
          "convert back", gpu.error);
    std::vector<float> widened(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      widened[i] = bf16 ? dpt::from_bf16(want[i]) : dpt::from_f16(want[i]);
    expect_bitwise(bf16 ? "bf16 widened" : "fp16 widened", gpu.download(back, x.size()), widened);
  }
  for (const int32_t to : std::initializer_list<int32_t>{DPT_DTYPE_F32, DPT_DTYPE_I32, 99}) {
    assert_int_equal(api.convert(gpu.ctx(), back, to, xd, DPT_DTYPE_F32, 1, gpu.error, sizeof gpu.error),
                     DPT_BACKEND_ERROR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(gpu.error, "convert"));
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_softmax_cross_entropy),
      cmocka_unit_test(test_gpu_sgd),
      cmocka_unit_test(test_gpu_adamw),
      cmocka_unit_test(test_gpu_l2_norm_and_scale),
      cmocka_unit_test(test_gpu_accumulate),
      cmocka_unit_test(test_gpu_convert),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
