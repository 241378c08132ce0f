// All-reduce (ring and textbook) and broadcast across the device threads: exact on integer-valued data for
// K = 1..8 and awkward sizes, every rank's result bitwise equal, repeated calls reuse the barrier safely;
// a 16-bit wire is the float32 all-reduce of the rounded contributions, rounded (whole or in pieces).
#include <cstring>
#include <vector>

#include "backend/context.hpp"
#include "comm/thread_collective.hpp"
#include "core/error.hpp"
#include "parallel/device_group.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

extern "C" {  // cmocka 1.1.5's header declares its functions without C linkage for C++
#include <cmocka.h>
}

namespace {

// Integer-valued, distinct per rank and element; sums stay far below 2^24 so float addition is exact.
float value(size_t rank, size_t i) {
  return float((rank + 1) * (i % 7) + rank);
}

std::vector<dpt::Device *> devices_of(const dpt::Context &context) {
  std::vector<dpt::Device *> devices;
  for (size_t i = 0; i < context.device_count(); ++i) devices.push_back(&context.device(i));
  return devices;
}

void check_all_reduce(dpt::Context &context, size_t count, dpt::AllReduceAlgorithm algorithm) {
  const size_t k = context.device_count();
  dpt::ThreadCollective collective(k);
  std::vector<std::vector<float>> buffers(k, std::vector<float>(count));
  for (int round = 0; round < 2; ++round) {  // twice: the second call reuses the barrier
    for (size_t r = 0; r < k; ++r)
      for (size_t i = 0; i < count; ++i) buffers[r][i] = value(r, i) * float(round + 1);
    dpt::DeviceGroup(devices_of(context), 0).run([&](size_t rank) {
      collective.all_reduce(rank, buffers[rank].data(), count, algorithm);
    });
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (size_t r = 0; r < k; ++r) expected += value(r, i) * float(round + 1);
      if (buffers[0][i] != expected)
        fail_msg("K=%zu count=%zu algorithm=%d element %zu: %g, expected %g", k, count, int(algorithm), i,
                 double(buffers[0][i]), double(expected));
    }
    for (size_t r = 1; r < k; ++r)
      if (count != 0 && std::memcmp(buffers[r].data(), buffers[0].data(), count * sizeof(float)) != 0)
        fail_msg("K=%zu count=%zu: rank %zu differs from rank 0", k, count, r);
  }
}

void test_all_reduce_exact(void **) {
  for (size_t k = 1; k <= 8; ++k) {
    dpt::Context context(dpt::ContextConfig{k, 0});
    const size_t sizes[] = {0, 1, k - 1, k, k + 1, (size_t(1) << 20) + 1};
    for (size_t count : sizes) {
      check_all_reduce(context, count, dpt::AllReduceAlgorithm::kRing);
      check_all_reduce(context, count, dpt::AllReduceAlgorithm::kNaive);
    }
  }
}

// Ring and textbook add in different orders: on data that is not integer-valued they may differ in the
// last bits, but each must be deterministic from run to run.
void test_all_reduce_deterministic(void **) {
  dpt::Context context(dpt::ContextConfig{5, 0});
  const size_t count = 10007;
  for (auto algorithm : {dpt::AllReduceAlgorithm::kRing, dpt::AllReduceAlgorithm::kNaive}) {
    std::vector<float> first;
    for (int run = 0; run < 3; ++run) {
      dpt::ThreadCollective collective(5);
      std::vector<std::vector<float>> buffers(5, std::vector<float>(count));
      for (size_t r = 0; r < 5; ++r)
        for (size_t i = 0; i < count; ++i) buffers[r][i] = 1.0f / float(1 + r + i);
      dpt::DeviceGroup(devices_of(context), 0).run([&](size_t rank) {
        collective.all_reduce(rank, buffers[rank].data(), count, algorithm);
      });
      if (run == 0) first = buffers[0];
      assert_memory_equal(first.data(), buffers[0].data(), count * sizeof(float));
    }
  }
}

// Gradient buckets reduce a buffer in pieces; the result must be the very bits of one whole reduction, for
// any cut, including cuts inside a ring block. Non-integer data, so a change of addition order would show.
void test_all_reduce_in_pieces_is_bitwise_whole(void **) {
  const size_t block = dpt::ThreadCollective::kRingBlock;
  const size_t count = 3 * block + 123;
  const std::vector<size_t> cuts = {0, 1, 100, block - 1, block + 5, 2 * block, 2 * block + 7, count};
  for (size_t k = 1; k <= 5; ++k) {
    dpt::Context context(dpt::ContextConfig{k, 0});
    for (auto algorithm : {dpt::AllReduceAlgorithm::kRing, dpt::AllReduceAlgorithm::kNaive}) {
      std::vector<std::vector<float>> whole(k, std::vector<float>(count)), pieces;
      for (size_t r = 0; r < k; ++r)
        for (size_t i = 0; i < count; ++i) whole[r][i] = 1.0f / float(3 + 7 * r + i % 1013);
      pieces = whole;
      dpt::ThreadCollective collective(k);
      dpt::DeviceGroup(devices_of(context), 0).run([&](size_t rank) {
        collective.all_reduce(rank, whole[rank].data(), count, algorithm);
        // Last piece first, as buckets go (backward runs from the last layer).
        for (size_t c = cuts.size() - 1; c-- > 0;)
          collective.all_reduce_range(rank, pieces[rank].data(), cuts[c], cuts[c + 1], algorithm);
      });
      for (size_t r = 0; r < k; ++r)
        if (std::memcmp(whole[r].data(), pieces[r].data(), count * sizeof(float)) != 0)
          fail_msg("K=%zu algorithm=%d rank %zu: pieces differ from the whole", k, int(algorithm), r);
      for (size_t r = 1; r < k; ++r)
        assert_memory_equal(whole[0].data(), whole[r].data(), count * sizeof(float));
    }
  }
}

// A 16-bit wire (bf16, fp16): every rank's contribution rounded, summed in float32 in the float32
// all-reduce's order, the sum rounded: bit for bit round(all_reduce_f32(round(x))), whole and in pieces
// (cuts inside ring blocks), identical on every rank, and not the float32 result.
void test_16_bit_wire(void **) {
  const size_t block = dpt::ThreadCollective::kRingBlock;
  const size_t count = 2 * block + 321;
  const std::vector<size_t> cuts = {0, 7, block - 3, block + 11, count};
  for (dpt::WireType wire : {dpt::WireType::kBF16, dpt::WireType::kF16})
    for (size_t k = 2; k <= 5; ++k) {
      dpt::Context context(dpt::ContextConfig{k, 0});
      for (auto algorithm : {dpt::AllReduceAlgorithm::kRing, dpt::AllReduceAlgorithm::kNaive}) {
        std::vector<std::vector<float>> input(k, std::vector<float>(count));
        for (size_t r = 0; r < k; ++r)
          for (size_t i = 0; i < count; ++i) input[r][i] = 1.0f / float(3 + 7 * r + i % 1013) - 0.01f;
        std::vector<std::vector<float>> whole = input, pieces = input, reference = input, plain = input;
        for (auto &v : reference) dpt::round_for_wire(v.data(), v.size(), wire);
        dpt::ThreadCollective collective(k);
        dpt::DeviceGroup(devices_of(context), 0).run([&](size_t rank) {
          collective.all_reduce(rank, whole[rank].data(), count, algorithm, wire);
          for (size_t c = cuts.size() - 1; c-- > 0;)
            collective.all_reduce_range(rank, pieces[rank].data(), cuts[c], cuts[c + 1], algorithm, wire);
          collective.all_reduce(rank, reference[rank].data(), count, algorithm);
          collective.all_reduce(rank, plain[rank].data(), count, algorithm);
        });
        dpt::round_for_wire(reference[0].data(), count, wire);
        for (size_t r = 0; r < k; ++r) {
          if (std::memcmp(whole[r].data(), reference[0].data(), count * sizeof(float)) != 0)
            fail_msg("wire %d K=%zu algorithm=%d rank %zu: not round(all_reduce(round(x)))", int(wire), k,
                     int(algorithm), r);
          if (std::memcmp(pieces[r].data(), whole[r].data(), count * sizeof(float)) != 0)
            fail_msg("wire %d K=%zu algorithm=%d rank %zu: pieces differ from the whole", int(wire), k,
                     int(algorithm), r);
        }
        size_t differ = 0;
        for (size_t i = 0; i < count; ++i) differ += whole[0][i] != plain[0][i];
        if (differ < count / 2)
          fail_msg("wire %d K=%zu: only %zu of %zu sums differ from float32's", int(wire), k, differ, count);
      }
    }
}

void test_broadcast(void **) {
  dpt::Context context(dpt::ContextConfig{4, 0});
  for (size_t root = 0; root < 4; ++root) {
    dpt::ThreadCollective collective(4);
    std::vector<std::vector<float>> buffers(4, std::vector<float>(1001));
    for (size_t r = 0; r < 4; ++r)
      for (size_t i = 0; i < 1001; ++i) buffers[r][i] = value(r, i);
    dpt::DeviceGroup(devices_of(context), 0).run([&](size_t rank) {
      collective.broadcast(rank, buffers[rank].data(), 1001, root);
    });
    for (size_t r = 0; r < 4; ++r)
      for (size_t i = 0; i < 1001; ++i) assert_true(buffers[r][i] == value(root, i));
  }
}

// A failing task does not stop the others, and its error is the one reported.
void test_group_reports_the_failure(void **) {
  dpt::Context context(dpt::ContextConfig{3, 0});
  std::vector<int> ran(3, 0);
  try {
    dpt::DeviceGroup(devices_of(context), 0).run([&](size_t rank) {
      ran[rank] = 1;
      if (rank == 1) dpt::throw_error(DPT_ERROR_DEVICE, "device 1 failed");
    });
    fail_msg("no exception");
  } catch (const dpt::Error &e) {
    assert_int_equal(e.status(), DPT_ERROR_DEVICE);
    assert_string_equal(e.what(), "device 1 failed");
  }
  assert_int_equal(ran[0] + ran[1] + ran[2], 3);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_all_reduce_exact),
      cmocka_unit_test(test_all_reduce_deterministic),
      cmocka_unit_test(test_all_reduce_in_pieces_is_bitwise_whole),
      cmocka_unit_test(test_16_bit_wire),
      cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_group_reports_the_failure),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
