#include "parallel/gradient_buckets.hpp"

#include <algorithm>

namespace dpt {

std::vector<GradientBucket> plan_buckets(const ModelSpec &spec, size_t bucket_bytes) {
  const auto &nodes = spec.nodes();
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  bool has_open = false;
  for (size_t l = nodes.size(); l-- > 0;) {
    const size_t begin = nodes[l].param_offset, end = begin + nodes[l].parameters();
    if (begin == end) continue;
    if (!has_open) open = GradientBucket{begin, end, l}, has_open = true;
    open.begin = begin;
    open.lowest_layer = l;
    if (bucket_bytes != 0 && (open.end - open.begin) * sizeof(float) >= bucket_bytes) {
      buckets.push_back(open);
      has_open = false;
    }
  }
  if (has_open) buckets.push_back(open);
  return buckets;
}

std::vector<size_t> bucket_of_nodes(const ModelSpec &spec, const std::vector<GradientBucket> &buckets) {
  std::vector<size_t> of(spec.nodes().size(), 0);
  for (size_t b = 0; b < buckets.size(); ++b)
    for (size_t node = 0; node < spec.nodes().size(); ++node) {
      const size_t at = spec.nodes()[node].param_offset;
      if (spec.nodes()[node].parameters() > 0 && at >= buckets[b].begin && at < buckets[b].end) of[node] = b;
    }
  return of;
}

size_t largest_bucket(const std::vector<GradientBucket> &buckets) {
  size_t largest = 0;
  for (const GradientBucket &b : buckets) largest = std::max(largest, b.end - b.begin);
  return largest;
}

}  // namespace dpt
