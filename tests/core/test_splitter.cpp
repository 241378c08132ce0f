// The batch splitter: every sample assigned exactly once, the even rule, proportional weighted slices, and
// sane results for absurd batch sizes; weights from measured speeds.
#include <cstdint>
#include <vector>

#include "parallel/splitter.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

size_t sum(const std::vector<size_t> &v) {
  size_t s = 0;
  for (size_t x : v) s += x;
  return s;
}

void test_even_split(void **) {
  for (size_t k = 1; k <= 9; ++k)
    for (size_t batch = 0; batch <= 40; ++batch) {
      const std::vector<size_t> c = dpt::split_batch(batch, std::vector<double>(k, 2.5));
      assert_int_equal(sum(c), batch);
      for (size_t i = 0; i < k; ++i) assert_int_equal(c[i], batch / k + (i < batch % k ? 1 : 0));
    }
}

void test_weighted_split_is_proportional(void **) {
  const std::vector<double> w = {1.0, 3.0, 0.5, 2.0, 0.25};
  const double total = 6.75;
  for (size_t batch = 0; batch <= 500; ++batch) {
    const std::vector<size_t> c = dpt::split_batch(batch, w);
    assert_int_equal(sum(c), batch);
    for (size_t i = 0; i < w.size(); ++i) {
      const double quota = double(batch) * w[i] / total;
      assert_true(double(c[i]) >= quota - 1.0 && double(c[i]) <= quota + 1.0);
    }
  }
  const std::vector<size_t> c = dpt::split_batch(135, w);  // quotas 20, 60, 10, 40, 5 exactly
  const size_t expected[] = {20, 60, 10, 40, 5};
  for (size_t i = 0; i < 5; ++i) assert_int_equal(c[i], expected[i]);
}

// Largest remainder in exact integers, the reference: floor(batch * w_i / W), then one more each to the
// largest remainders batch * w_i mod W, ties to the lower index.
std::vector<size_t> reference_split(size_t batch, const std::vector<uint64_t> &w) {
  uint64_t total = 0;
  for (uint64_t x : w) total += x;
  std::vector<size_t> c(w.size());
  std::vector<uint64_t> r(w.size());
  size_t left = batch;
  for (size_t i = 0; i < w.size(); ++i)
    c[i] = batch * w[i] / total, r[i] = batch * w[i] % total, left -= c[i];
  for (; left > 0; --left) {
    size_t best = 0;
    for (size_t i = 1; i < w.size(); ++i)
      if (r[i] > r[best]) best = i;
    ++c[best];
    r[best] = 0;  // (every remainder left is below total: no device gets two)
  }
  return c;
}

// The rounding is exact: ties between equal remainders go to the lower index, for every batch size (the
// floating-point quotas of old gave 36:31:27:23:18:14:9:4 for weights 8..1 and batch 162).
void test_weighted_split_is_exact(void **) {
  const std::vector<std::vector<uint64_t>> weight_sets = {
      {8, 7, 6, 5, 4, 3, 2, 1}, {3, 1}, {1, 3, 3, 1}, {5, 3, 7}, {1000, 1, 999}, {6, 10, 15}, {2, 2, 1}};
  for (const auto &ws : weight_sets) {
    std::vector<double> as_double(ws.begin(), ws.end()), scaled(ws.size());
    for (size_t i = 0; i < ws.size(); ++i) scaled[i] = double(ws[i]) / 64.0;  // binary fractions: exact too
    for (size_t batch = 0; batch <= 1000; ++batch) {
      const std::vector<size_t> want = reference_split(batch, ws);
      if (dpt::split_batch(batch, as_double) != want || dpt::split_batch(batch, scaled) != want)
        fail_msg("weights %zu.. (%zu devices), batch %zu: not the exact largest-remainder split",
                 size_t(ws[0]), ws.size(), batch);
    }
  }
  const std::vector<size_t> c = dpt::split_batch(162, {8, 7, 6, 5, 4, 3, 2, 1});
  assert_true(c == (std::vector<size_t>{36, 32, 27, 23, 18, 13, 9, 4}));
}

void test_huge_batches(void **) {
  const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, size_t(1) << 63, (size_t(1) << 53) + 1};
  for (size_t batch : huge) {
    const std::vector<size_t> even = dpt::split_batch(batch, {1.0, 1.0, 1.0});
    assert_true(sum(even) == batch);
    const std::vector<size_t> weighted = dpt::split_batch(batch, {1.0, 1e-9, 3.0});
    size_t total = 0;
    for (size_t x : weighted) {
      assert_true(x <= batch - total);  // no overflow on the way
      total += x;
    }
    assert_true(total == batch);
  }
}

void test_weights_from_speed(void **) {
  // Seconds per sample 1, 2 and 4: speeds 1, 0.5, 0.25 of the fastest, in twentieths.
  const std::vector<double> w = dpt::weights_from_speed({1.0, 2.0, 4.0});
  assert_true(w[0] == 20.0 && w[1] == 10.0 && w[2] == 5.0);
  // 1% timing noise does not change the weights.
  const std::vector<double> n = dpt::weights_from_speed({1.0, 1.01, 0.995});
  assert_true(n[0] == 20.0 && n[1] == 20.0 && n[2] == 20.0);
  // A device 100x slower still gets the minimum weight, never zero.
  assert_true(dpt::weights_from_speed({1.0, 100.0})[1] == 1.0);
}

void test_cap_split_by_room(void **) {
  using V = std::vector<size_t>;
  const size_t none = SIZE_MAX;
  // Device 0 holds 10 of its 40: 30 go to devices with room, in device order.
  assert_true(dpt::cap_split(V{40, 30, 30}, V{10, 45, none}) == (V{10, 45, 45}));
  // Room everywhere: unchanged.
  assert_true(dpt::cap_split(V{40, 30, 30}, V{none, none, none}) == (V{40, 30, 30}));
  // Exactly full.
  assert_true(dpt::cap_split(V{5, 5}, V{2, 8}) == (V{2, 8}));
  // Not enough room anywhere: unchanged (the step reports the out-of-memory).
  assert_true(dpt::cap_split(V{5, 5}, V{2, 7}) == (V{5, 5}));
  // Nothing lost: every capped split sums to the batch.
  for (size_t r0 = 0; r0 < 50; r0 += 7) {
    const V capped = dpt::cap_split(V{25, 25}, V{r0, 40});
    assert_true(capped[0] + capped[1] == 50);
  }
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_even_split),
      cmocka_unit_test(test_weighted_split_is_proportional),
      cmocka_unit_test(test_huge_batches),
      cmocka_unit_test(test_weights_from_speed),
      cmocka_unit_test(test_weighted_split_is_exact),
      cmocka_unit_test(test_cap_split_by_room),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
