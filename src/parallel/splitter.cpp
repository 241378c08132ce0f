#include "parallel/splitter.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dpt {

std::vector<size_t> split_batch(size_t batch, const std::vector<double> &weights) {
  const size_t k = weights.size();
  std::vector<size_t> counts(k, batch / k);
  const bool even = std::all_of(weights.begin(), weights.end(), [&](double w) { return w == weights[0]; });
  if (even) {  // exact integer arithmetic: the first batch % k devices get one more
    for (size_t i = 0; i < batch % k; ++i) ++counts[i];
    return counts;
  }
  // Largest remainder in long double (64-bit mantissa): floors first, then one more sample each to the
  // devices with the largest fractional parts (ties to the lower index).
  const long double total = std::accumulate(weights.begin(), weights.end(), 0.0L);
  std::vector<long double> fraction(k);
  size_t assigned = 0;
  for (size_t i = 0; i < k; ++i) {
    const long double quota = (long double)batch * ((long double)weights[i] / total);
    const long double floor = std::min(std::floor(quota), (long double)(batch - assigned));
    counts[i] = size_t(floor);
    fraction[i] = quota - floor;
    assigned += counts[i];
  }
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fraction[a] > fraction[b]; });
  // Rounding leaves at most about k samples over; the division keeps this exact even for absurd batches.
  const size_t left = batch - assigned;
  for (size_t i = 0; i < k; ++i) counts[order[i]] += left / k + (i < left % k ? 1 : 0);
  return counts;
}

std::vector<double> weights_from_speed(const std::vector<double> &seconds_per_sample) {
  std::vector<double> speed(seconds_per_sample.size());
  for (size_t i = 0; i < speed.size(); ++i) speed[i] = 1.0 / std::max(seconds_per_sample[i], 1e-12);
  const double fastest = *std::max_element(speed.begin(), speed.end());
  for (double &s : speed) s = std::max(1.0, std::round(20.0 * s / fastest)) / 20.0;
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
