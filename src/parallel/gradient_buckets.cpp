#include "parallel/gradient_buckets.hpp"

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

}  // namespace dpt
