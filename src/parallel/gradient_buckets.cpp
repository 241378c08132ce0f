#include "parallel/gradient_buckets.hpp"

namespace dpt {

std::vector<GradientBucket> plan_buckets(const ModelSpec &spec, size_t bucket_bytes) {
  const auto &layers = spec.layers();
  std::vector<size_t> offset(layers.size() + 1, 0);
  for (size_t l = 0; l < layers.size(); ++l) offset[l + 1] = offset[l] + layers[l].parameters();
  std::vector<GradientBucket> buckets;
  GradientBucket open;
  bool has_open = false;
  for (size_t l = layers.size(); l-- > 0;) {
    if (layers[l].parameters() == 0) continue;
    if (!has_open) open = GradientBucket{offset[l], offset[l + 1], l}, has_open = true;
    open.begin = offset[l];
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
