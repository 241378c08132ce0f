// Fuzz target: the safetensors loader (docs/safetensors.md). The input goes through a real file (memfd), as
// a user's would, so that the staged reading (header length, header, then the data) is fuzzed with the
// decoder. Any byte string must be rejected with a dpt::Error or load into a small trainer with a BatchNorm
// (whose names the seeds use), and a successful load must leave a trainer that can take a step.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "io/trainer_safetensors.hpp"
#include "mem_file.hpp"

namespace {

// The model of the committed seeds (tests/fuzz/make_seeds.cpp writes them with this model): "0.weight",
// "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "3.weight", "3.bias".
dpt::ModelSpec fuzz_model() {
  dpt::ModelSpec m(dpt::Shape{1, 4, 4});
  m.add_dense(5);
  m.add_batch_norm(m.output_tensor());
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(3);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0});
  dpt::Trainer trainer(context, fuzz_model(), dpt::TrainerConfig{});
  MemFile file(data, size);
  if (file.fd < 0) return 0;
  try {
    dpt::load_safetensors(trainer, file.path());
  } catch (const dpt::Error &) {
    return 0;  // rejected: fine
  }
  std::vector<float> x(4 * 16, 0.25f);
  std::vector<int32_t> y = {0, 1, 2, 0};
  trainer.step(x.data(), y.data(), 4);  // accepted: the trainer must work
  return 0;
}
