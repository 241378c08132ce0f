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
      tied_(spec),
      lanes_(replicas.size()) {
  for (const Node &node : spec.nodes()) node_offsets_.push_back(node.param_offset);
  const size_t largest = largest_bucket(buckets_);
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    slots_.emplace_back(replicas[rank]->kernels->memory(), largest);
    if (!tied_.empty()) tied_values_.emplace_back(replicas[rank]->kernels->memory(), tied_.floats());
    ranges_.push_back(replicas[rank]->params.data());
    lanes_[rank].owner = this;
    lanes_[rank].rank = rank;
  }
}

ParameterSource ParameterGatherer::source(size_t rank) const {
  lanes_[rank].bucket = SIZE_MAX;
  ParameterSource source{&node_parameters, &lanes_[rank]};
  if (tied_.empty()) return source;
  for (const TiedSources::Source &s : tied_.sources())
    copy_from_owners(tied_values_[rank].data() + s.packed, s.offset, s.offset + s.count);
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

void ParameterGatherer::copy_from_owners(float *dst, size_t begin, size_t end) const {
  for (size_t q = 0; q < ranges_.size(); ++q) {
    const size_t lo = std::max(begin, shards_.begin(q)), hi = std::min(end, shards_.end(q));
    if (lo < hi)
      std::memcpy(dst + (lo - begin), ranges_[q] + (lo - shards_.begin(q)), (hi - lo) * sizeof(float));
  }
}

void ParameterGatherer::gather(size_t rank, size_t bucket) const {
  const GradientBucket &b = buckets_[bucket];
  const double start = platform::now_seconds();
  copy_from_owners(slots_[rank].data(), b.begin, b.end);
  trace_.record(TraceRecorder::compute_row(rank), TraceKind::kGather, bucket, start, platform::now_seconds());
}

}  // namespace dpt
