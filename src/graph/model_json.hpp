// A model description as JSON text and back (the format: docs/model-json.md). Generic over the op
// descriptors: a node's attributes are the ones its OpDef names, so a new op needs nothing here.
#pragma once

#include <string>
#include <string_view>

#include "graph/model_spec.hpp"

namespace dpt {

// One node per line; reals in their shortest form that reads back to the same double.
std::string model_to_json(const ModelSpec &spec);

// Builds the model a JSON text describes. DPT_ERROR_FORMAT when the text is not JSON or not a model
// description (a wrong type, a missing, unknown or duplicate key, an unknown op, an integer out of range,
// a negative size or id); the code ModelSpec gives (DPT_ERROR_INVALID_ARGUMENT, DPT_ERROR_OUT_OF_RANGE)
// for a well-formed description of a model the builders refuse. The message names the line and the node.
ModelSpec model_from_json(std::string_view text);

}  // namespace dpt
