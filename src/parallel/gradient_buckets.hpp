// Gradient buckets: the flat gradient vector cut at node boundaries into pieces of about a given size,
// in the order backward finishes them (the last layer's first). A bucket can be all-reduced as soon as
// backward has passed its lowest layer, while backward goes on with the layers below.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/model_spec.hpp"

namespace dpt {

struct GradientBucket {
  size_t begin = 0, end = 0;  // range of the flat gradient vector
  size_t lowest_layer = 0;    // the bucket is complete once backward has finished this layer
};

// Layers are grouped from the last one down until a bucket holds at least bucket_bytes; a layer is never
// split (its gradient is finished all at once). bucket_bytes == 0 plans a single bucket.
std::vector<GradientBucket> plan_buckets(const ModelSpec &spec, size_t bucket_bytes);
// Per node, the bucket that holds its own parameters (0 for a node without any).
std::vector<size_t> bucket_of_nodes(const ModelSpec &spec, const std::vector<GradientBucket> &buckets);
// The size of the largest bucket, in floats.
size_t largest_bucket(const std::vector<GradientBucket> &buckets);

}  // namespace dpt
