// Fuzz target: the checkpoint loader. Any byte string must be rejected with a dpt::Error or decode into
// tensors; a decoded image is then loaded into a small trainer (whose model a seed's description matches),
// and a successful load must leave a trainer that can take a step.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"

namespace {

// The model of the committed seeds (tests/fuzz/make_seeds.cpp writes them with this model).
dpt::ModelSpec fuzz_model() {
  dpt::ModelSpec m(dpt::Shape{1, 4, 4});
  m.add_dense(5);
  m.add_activation(dpt::LayerKind::kTanh);
  m.add_dense(3);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0});
  dpt::TrainerConfig config;
  config.optimizer.momentum = 0.9f;
  dpt::Trainer trainer(context, fuzz_model(), config);
  const std::vector<unsigned char> image(data, data + size);
  try {
    dpt::load_checkpoint_image(trainer, image, "fuzz");
  } catch (const dpt::Error &) {
    return 0;  // rejected: fine
  }
  std::vector<float> x(4 * 16, 0.25f);
  std::vector<int32_t> y = {0, 1, 2, 0};
  trainer.step(x.data(), y.data(), 4);  // accepted: the trainer must work
  return 0;
}
