#include "parallel/parameter_gatherer.hpp"

#include <utility>

#include "core/platform.hpp"

namespace dpt {

ParameterGatherer::ParameterGatherer(const std::vector<std::unique_ptr<Replica>> &replicas,
                                     const ModelSpec &spec, size_t bucket_bytes, const ShardLayout &shards,
                                     TraceRecorder &trace, WorldPlacement placement)
    : owners_(replicas, shards, std::move(placement)),
      trace_(trace),
      buckets_(plan_buckets(spec, bucket_bytes)),
      bucket_of_node_(bucket_of_nodes(spec, buckets_)),
      tied_(spec),
      lanes_(replicas.size()) {
  for (const Node &node : spec.nodes()) node_offsets_.push_back(node.param_offset);
  const size_t largest = largest_bucket(buckets_);
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    slots_.emplace_back(replicas[rank]->kernels->memory(), largest);
    if (!tied_.empty()) tied_values_.emplace_back(replicas[rank]->kernels->memory(), tied_.floats());
    lanes_[rank].owner = this;
    lanes_[rank].rank = rank;
  }
}

ParameterSource ParameterGatherer::source(size_t rank) const {
  lanes_[rank].bucket = SIZE_MAX;
  ParameterSource source{&node_parameters, &lanes_[rank]};
  if (tied_.empty()) return source;
  for (const TiedSources::Source &s : tied_.sources())
    owners_.copy(tied_values_[rank].data() + s.packed, s.offset, s.offset + s.count);
  source.tied_parameters = &tied_parameters;
  return source;
}

const float *ParameterGatherer::tied_parameters(void *context, size_t offset) {
  const Lane &lane = *static_cast<const Lane *>(context);
  const TiedSources &tied = lane.owner->tied_;
  return lane.owner->tied_values_[lane.rank].data() + tied.sources()[tied.index(offset)].packed;
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

void ParameterGatherer::gather(size_t rank, size_t bucket) const {
  const GradientBucket &b = buckets_[bucket];
  const double start = platform::now_seconds();
  owners_.copy(slots_[rank].data(), b.begin, b.end);
  trace_.record(TraceRecorder::compute_row(rank), TraceKind::kGather, bucket, start, platform::now_seconds());
}

}  // namespace dpt
