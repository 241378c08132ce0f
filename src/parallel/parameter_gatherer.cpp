#include "parallel/parameter_gatherer.hpp"

#include <algorithm>
#include <cstring>

#include "core/platform.hpp"

namespace dpt {

ParameterGatherer::ParameterGatherer(const std::vector<std::unique_ptr<Replica>> &replicas,
                                     const ModelSpec &spec, size_t bucket_bytes, const ShardLayout &shards,
                                     TraceRecorder &trace)
    : shards_(shards),
      trace_(trace),
      buckets_(plan_buckets(spec, bucket_bytes)),
      bucket_of_node_(bucket_of_nodes(spec, buckets_)),
      lanes_(replicas.size()) {
  for (const Node &node : spec.nodes()) node_offsets_.push_back(node.param_offset);
  const size_t largest = largest_bucket(buckets_);
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    slots_.emplace_back(replicas[rank]->kernels->memory(), largest);
    ranges_.push_back(replicas[rank]->params.data());
    lanes_[rank].owner = this;
    lanes_[rank].rank = rank;
  }
}

ParameterSource ParameterGatherer::source(size_t rank) const {
  lanes_[rank].bucket = SIZE_MAX;
  return ParameterSource{&node_parameters, &lanes_[rank]};
}

const float *ParameterGatherer::node_parameters(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  const ParameterGatherer &self = *lane.owner;
  const size_t bucket = self.bucket_of_node_[node];
  if (lane.bucket != bucket) {
    self.gather(lane.rank, bucket);
    lane.bucket = bucket;
  }
  return self.slots_[lane.rank].data() + (self.node_offsets_[node] - self.buckets_[bucket].begin);
}

// The bucket's elements from every owner whose range meets it.
void ParameterGatherer::gather(size_t rank, size_t bucket) const {
  const GradientBucket &b = buckets_[bucket];
  const double start = platform::now_seconds();
  float *slot = slots_[rank].data();
  for (size_t q = 0; q < ranges_.size(); ++q) {
    const size_t lo = std::max(b.begin, shards_.begin(q)), hi = std::min(b.end, shards_.end(q));
    if (lo < hi)
      std::memcpy(slot + (lo - b.begin), ranges_[q] + (lo - shards_.begin(q)), (hi - lo) * sizeof(float));
  }
  trace_.record(TraceRecorder::compute_row(rank), TraceKind::kGather, bucket, start, platform::now_seconds());
}

}  // namespace dpt
