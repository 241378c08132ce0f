#include "parallel/parameter_gatherer.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

ParameterGatherer::ParameterGatherer(const std::vector<std::unique_ptr<Replica>> &replicas,
                                     const ModelSpec &spec, size_t bucket_bytes, const ShardLayout &shards,
                                     TraceRecorder &trace, WorldPlacement placement, bool read_ahead)
    : owners_(replicas, shards, std::move(placement)),
      trace_(trace),
      buckets_(plan_buckets(spec, bucket_bytes)),
      bucket_of_node_(bucket_of_nodes(spec, buckets_)),
      tied_(spec),
      lanes_(replicas.size()) {
  for (const Node &node : spec.nodes()) node_offsets_.push_back(node.param_offset);
  // Within a process only a GPU's copy stream can hide a read (a CPU device's copy is its thread's work).
  read_ahead_ = read_ahead && (owners_.across_processes() ||
                               (!replicas.empty() && replicas[0]->kernels->copies_beside_compute()));
  const size_t largest = largest_bucket(buckets_);
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    for (size_t s = 0; s < slots_per_replica(); ++s)
      slots_.emplace_back(replicas[rank]->kernels->memory(), largest);
    if (!tied_.empty()) tied_values_.emplace_back(replicas[rank]->kernels->memory(), tied_.floats());
    lanes_[rank].owner = this;
    lanes_[rank].rank = rank;
  }
}

ParameterGatherer::~ParameterGatherer() {
  for (Lane &lane : lanes_) try {
      settle(lane);
    } catch (const Error &) {  // a process stalled or MPI broke: nothing to report to
    }
}

ParameterSource ParameterGatherer::source(size_t rank) const {
  Lane &lane = lanes_[rank];
  settle(lane);
  lane.bucket = lane.previous = SIZE_MAX;
  ParameterSource source{&node_parameters, &lanes_[rank]};
  if (tied_.empty()) return source;
  for (const TiedSources::Source &s : tied_.sources())
    owners_.copy(tied_values_[rank].data() + s.packed, s.offset, s.offset + s.count, rank);
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
  if (lane.bucket != bucket) self.bring(lane, bucket);
  return self.slot(lane, lane.current) + (self.node_offsets_[node] - self.buckets_[bucket].begin);
}

void ParameterGatherer::settle(Lane &lane) const {
  lane.ahead = SIZE_MAX;
  owners_.finish_copy(lane.pending);
}

void ParameterGatherer::bring(Lane &lane, size_t bucket) const {
  const GradientBucket &b = buckets_[bucket];
  const double start = platform::now_seconds();
  const bool read_ahead = lane.ahead == bucket;
  if (read_ahead) {
    lane.ahead = SIZE_MAX;
    owners_.finish_copy(lane.pending);
    lane.current ^= 1;
  } else {
    settle(lane);
    owners_.copy(slot(lane, lane.current), b.begin, b.end, lane.rank);
  }
  trace_.record(TraceRecorder::compute_row(lane.rank),
                read_ahead ? TraceKind::kGatherReadAhead : TraceKind::kGather, bucket, start,
                platform::now_seconds());
  lane.previous = lane.bucket;
  lane.bucket = bucket;
  if (!read_ahead_ || lane.previous == SIZE_MAX) return;
  // The pass goes through the buckets in order: the next one lies as far on as the last step went.
  const size_t next = 2 * bucket - lane.previous;  // wraps past SIZE_MAX below bucket 0
  if (next >= buckets_.size()) return;
  const GradientBucket &n = buckets_[next];
  lane.pending = owners_.start_copy(slot(lane, lane.current ^ 1), n.begin, n.end, lane.rank);
  lane.ahead = next;
}

}  // namespace dpt
