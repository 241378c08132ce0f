#include "core/error.hpp"
#include "nn/layers.hpp"

namespace dpt {

std::unique_ptr<Layer> make_layer(const LayerSpec &spec) {
  switch (spec.kind) {
    case LayerKind::kDense:
      return std::make_unique<DenseLayer>(spec);
    case LayerKind::kConv2d:
      return std::make_unique<Conv2dLayer>(spec);
    case LayerKind::kAvgPool:
      return std::make_unique<AvgPoolLayer>(spec);
    case LayerKind::kMaxPool:
      return std::make_unique<MaxPoolLayer>(spec);
    case LayerKind::kRelu:
    case LayerKind::kSigmoid:
    case LayerKind::kTanh:
      return std::make_unique<ActivationLayer>(spec);
    case LayerKind::kFlatten:
      return std::make_unique<FlattenLayer>(spec);
    case LayerKind::kDropout:
      return std::make_unique<DropoutLayer>(spec);
  }
  throw_error(DPT_ERROR_INTERNAL, "unknown layer kind");
}

}  // namespace dpt
