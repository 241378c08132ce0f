#include "parallel/splitter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace dpt {

std::vector<size_t> split_batch(size_t batch, const std::vector<double> &weights) {
  const size_t k = weights.size();
  std::vector<size_t> counts(k, batch / k);
  const bool even = std::all_of(weights.begin(), weights.end(), [&](double w) { return w == weights[0]; });
  if (even) {  // the first batch % k devices get one more
    for (size_t i = 0; i < batch % k; ++i) ++counts[i];
    return counts;
  }
  // Integer weights (see the header): at most 2^40 each, so N < 2^47 and batch * n_i < 2^111.
  constexpr int kScaleBits = 40;
  int top = 0;
  std::frexp(*std::max_element(weights.begin(), weights.end()), &top);
  std::vector<uint64_t> n(k);
  uint64_t total = 0;
  for (size_t i = 0; i < k; ++i)
    total += n[i] = uint64_t(std::llround(std::ldexp(weights[i], kScaleBits - top)));
  using u128 = unsigned __int128;
  std::vector<uint64_t> remainder(k);
  size_t assigned = 0;
  for (size_t i = 0; i < k; ++i) {
    const u128 share = u128(batch) * n[i];
    counts[i] = size_t(share / total);
    remainder[i] = uint64_t(share % total);
    assigned += counts[i];
  }
  // The floors leave fewer than k samples (each floor loses less than one).
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t i = 0; i < batch - assigned; ++i) ++counts[order[i]];
  return counts;
}

std::vector<double> weights_from_speed(const std::vector<double> &seconds_per_sample) {
  std::vector<double> speed(seconds_per_sample.size());
  for (size_t i = 0; i < speed.size(); ++i) speed[i] = 1.0 / std::max(seconds_per_sample[i], 1e-12);
  const double fastest = *std::max_element(speed.begin(), speed.end());
  for (double &s : speed) s = std::max(1.0, std::round(20.0 * s / fastest));
  return speed;
}

std::vector<size_t> cap_split(std::vector<size_t> counts, const std::vector<size_t> &room) {
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  size_t capacity = 0;  // saturates at total: room may be SIZE_MAX
  for (size_t r : room) capacity = std::min(total, capacity + std::min(r, total));
  if (capacity < total) return counts;
  size_t excess = 0;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > room[i]) excess += counts[i] - room[i], counts[i] = room[i];
  for (size_t i = 0; i < counts.size() && excess > 0; ++i) {
    const size_t give = std::min(excess, room[i] - counts[i]);
    counts[i] += give;
    excess -= give;
  }
  return counts;
}

}  // namespace dpt
