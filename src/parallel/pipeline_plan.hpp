// How a model is cut into pipeline stages (TrainerConfig::pipeline_stages): each stage is a run of
// consecutive nodes [first_node, end_node) that becomes a model of its own, whose input is the one tensor
// that crosses into it from the stages before. A stage may begin only at a node where exactly one tensor is
// live (made before the node, read by it or later: a chain's previous output, not the middle of a residual
// block), so that a micro-batch passes one activation forward and one gradient back. The nodes' parameters
// and running statistics are contiguous in the flat vectors, so a stage owns a range of each.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/model_spec.hpp"

namespace dpt {

struct PipelineStage {
  ModelSpec spec;  // the stage's nodes as a model: input = the tensor crossing in, output = the one out
  size_t first_node = 0, end_node = 0;
  size_t param_begin = 0, param_end = 0;    // its range of the model's flat parameters
  size_t buffer_begin = 0, buffer_end = 0;  // and of its running statistics
  size_t input_tensor = 0;                  // the model's id of the tensor it reads (0: the model's input)
  // A parameter tied to one of an earlier stage (gpt's LM head to its token embedding): the stage keeps a
  // mirror of the source as its model's last parameter (after its range), whose gradient the source's
  // stage adds to its own and whose values it copies back after each update. mirror_source: the source's
  // offset in the flat vector; mirror_floats: 0 for none.
  size_t mirror_source = 0, mirror_floats = 0;
};

// The nodes where a stage may begin, ascending (the first node is never one).
std::vector<size_t> cut_candidates(const ModelSpec &spec);

// stages - 1 cuts among the candidates that minimise the largest stage's cost (costs: one per node, for
// instance its parameters). Throws DPT_ERROR_INVALID_ARGUMENT when the model has fewer places to cut.
std::vector<size_t> balanced_cuts(const ModelSpec &spec, size_t stages, const std::vector<double> &costs);

// The nodes named (each the first node of a stage after the first), ascending and each a candidate;
// throws DPT_ERROR_INVALID_ARGUMENT naming the first that is not.
std::vector<size_t> named_cuts(const ModelSpec &spec, const std::vector<std::string> &names);

// The stages between the cuts (ascending candidates). A tie within a stage stays a tie; a tie across stages
// becomes a mirror (above), which must be the later stage's last parameter (else DPT_ERROR_UNSUPPORTED).
std::vector<PipelineStage> cut_model(const ModelSpec &spec, const std::vector<size_t> &cuts);

}  // namespace dpt
