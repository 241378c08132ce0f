#include "io/checkpoint.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "io/checkpoint_format.hpp"
#include "parallel/loss_scaler.hpp"

namespace dpt {

static_assert(std::endian::native == std::endian::little, "checkpoints store little-endian tensors");

namespace {

// Counters, in this order, in the "trainer.counters" tensor.
enum Counter { kOptimizerSteps, kEpochsDone, kSamplesIntoEpoch, kSeed, kCounterCount };

template <typename T>
Tensor make_tensor(const std::string &name, ElementType dtype, const T *data, size_t count) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = {count};
  t.bytes.resize(count * sizeof(T));
  if (count != 0) std::memcpy(t.bytes.data(), data, count * sizeof(T));
  return t;
}

const Tensor &find(const std::map<std::string, const Tensor *> &tensors, const std::string &name,
                   ElementType dtype, const std::string &path) {
  auto it = tensors.find(name);
  DPT_REQUIRE(it != tensors.end(), DPT_ERROR_FORMAT,
              "checkpoint '" + path + "' has no tensor '" + name + "'");
  DPT_REQUIRE(it->second->dtype == dtype && it->second->shape.size() == 1, DPT_ERROR_FORMAT,
              "checkpoint '" + path + "': tensor '" + name + "' has the wrong dtype or rank");
  return *it->second;
}

template <typename T>
std::vector<T> values(const Tensor &t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

// Refuses a NaN or an infinity (training from it would "succeed" with a NaN loss), naming the first one.
void require_finite(const std::vector<float> &v, const char *name, const std::string &path) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw_error(DPT_ERROR_FORMAT, "checkpoint '" + path + "': " + name + "[" + std::to_string(i) + "] is " +
                                        (std::isnan(v[i]) ? "NaN"
                                         : v[i] > 0       ? "+Inf"
                                                          : "-Inf"));
}

// Reads a checkpoint file, refusing it from its header (then its table) before reading the rest: a large
// file that is no checkpoint fails after 64 bytes, without allocating its size.
std::vector<unsigned char> read_checkpoint_file(const std::string &path) {
  file_io::InputFile file(path);
  const uint64_t size = file.size();
  const std::string where = "checkpoint '" + path + "'";
  std::vector<unsigned char> image(size_t(std::min<uint64_t>(size, kCheckpointHeaderSize)));
  image.resize(file.read_fully(image.data(), image.size()));
  const CheckpointHeader header = decode_checkpoint_header(image.data(), image.size(), size, path);
  DPT_REQUIRE(size <= kMaxCheckpointBytes, DPT_ERROR_FORMAT,
              where + " is " + std::to_string(size) + " bytes, more than the limit of " +
                  std::to_string(kMaxCheckpointBytes));
  const auto read_up_to = [&](uint64_t end) {
    const size_t begin = image.size();
    image.resize(size_t(end));
    DPT_REQUIRE(file.read_fully(image.data() + begin, image.size() - begin) == image.size() - begin,
                DPT_ERROR_FORMAT, where + " is truncated (it shrank while being read)");
  };
  read_up_to(header.data_offset);
  decode_checkpoint_table(image.data() + kCheckpointHeaderSize, header, path);
  read_up_to(size);
  return image;
}

}  // namespace

void save_checkpoint(const Trainer &trainer, const std::string &path) {
  const TrainerState state = trainer.save_state();
  // A shard across processes (or stages divided among them): every process took part in save_state;
  // process 0 writes.
  if (trainer.world_shards() && trainer.world()->rank() != 0) return;
  const std::string model = trainer.spec().describe();
  const uint64_t counters[kCounterCount] = {state.optimizer_steps, state.epochs_done,
                                            state.samples_into_epoch, trainer.config().seed};
  const uint64_t optimizer_kind = uint64_t(trainer.config().optimizer.kind);
  std::vector<Tensor> tensors;
  tensors.push_back(make_tensor("model.description", ElementType::kU8, model.data(), model.size()));
  tensors.push_back(
      make_tensor("model.parameters", ElementType::kF32, state.parameters.data(), state.parameters.size()));
  tensors.push_back(make_tensor("optimizer.kind", ElementType::kU64, &optimizer_kind, 1));
  tensors.push_back(make_tensor("optimizer.state", ElementType::kF32, state.optimizer_state.data(),
                                state.optimizer_state.size()));
  tensors.push_back(make_tensor("trainer.counters", ElementType::kU64, counters, kCounterCount));
  // Only a model with running statistics has buffers: older readers then see the file they know.
  if (!state.buffers.empty())
    tensors.push_back(
        make_tensor("model.buffers", ElementType::kF32, state.buffers.data(), state.buffers.size()));
  // Likewise only a trainer with loss scaling (float16) saves its scaler: the scale and its growth count.
  if (state.loss_scale != 0) {
    const double scaler[2] = {state.loss_scale, double(state.loss_scale_growth_tracker)};
    tensors.push_back(make_tensor("trainer.loss_scaler", ElementType::kF64, scaler, 2));
  }
  file_io::write_file_atomic(path, encode_checkpoint(tensors));
}

void load_checkpoint(Trainer &trainer, const std::string &path) {
  load_checkpoint_image(trainer, read_checkpoint_file(path), path);
}

namespace {
// Where two model descriptions part (they run to thousands of bytes, a message to one line): "from byte
// N, the checkpoint's reads '...' and the trainer's '...'" (64 bytes of each, "(its end)" for none).
std::string first_difference(const std::string &saved, const std::string &wanted) {
  size_t at = 0;
  while (at < saved.size() && at < wanted.size() && saved[at] == wanted[at]) ++at;
  while (at > 0 && saved[at - 1] != ' ') --at;  // from the start of the node (or tie) that differs
  const auto part = [&](const std::string &text) {
    std::string quoted(1, '\'');  // (not "'" + ...: GCC 12 warns falsely on it, -Wrestrict)
    if (at >= text.size()) return std::string("(its end)");
    quoted += text.substr(at, 64);
    quoted += text.size() - at > 64 ? "...'" : "'";
    return quoted;
  };
  return "from byte " + std::to_string(at) + " of their descriptions, the checkpoint's reads " + part(saved) +
         " and the trainer's " + part(wanted);
}
}  // namespace

void load_checkpoint_image(Trainer &trainer, const std::vector<unsigned char> &image,
                           const std::string &path) {
  const std::vector<Tensor> decoded = decode_checkpoint(image, path);
  std::map<std::string, const Tensor *> tensors;
  for (const Tensor &t : decoded) tensors[t.name] = &t;

  const Tensor &description = find(tensors, "model.description", ElementType::kU8, path);
  const std::string model(description.bytes.begin(), description.bytes.end());
  DPT_REQUIRE(model == trainer.spec().describe(), DPT_ERROR_INVALID_ARGUMENT,
              "checkpoint '" + path + "' holds another model than the trainer's: " +
                  first_difference(model, trainer.spec().describe()));
  const std::vector<uint64_t> kind =
      values<uint64_t>(find(tensors, "optimizer.kind", ElementType::kU64, path));
  DPT_REQUIRE(kind.size() == 1 && kind[0] == uint64_t(trainer.config().optimizer.kind),
              DPT_ERROR_INVALID_ARGUMENT,
              "checkpoint '" + path + "' was written with another optimizer than the trainer's");
  const std::vector<uint64_t> counters =
      values<uint64_t>(find(tensors, "trainer.counters", ElementType::kU64, path));
  DPT_REQUIRE(
      counters.size() == kCounterCount, DPT_ERROR_FORMAT,
      "checkpoint '" + path + "': trainer.counters has " + std::to_string(counters.size()) + " entries");

  TrainerState state;
  state.parameters = values<float>(find(tensors, "model.parameters", ElementType::kF32, path));
  state.optimizer_state = values<float>(find(tensors, "optimizer.state", ElementType::kF32, path));
  if (trainer.spec().buffer_count() != 0) {
    state.buffers = values<float>(find(tensors, "model.buffers", ElementType::kF32, path));
    require_finite(state.buffers, "model.buffers", path);
  }
  require_finite(state.parameters, "model.parameters", path);
  require_finite(state.optimizer_state, "optimizer.state", path);
  // AdamW divides by the square root of its second moments (the state's second half): a negative one
  // would turn the next update into NaNs.
  if (trainer.config().optimizer.kind == OptimizerKind::kAdamW &&
      state.optimizer_state.size() == 2 * state.parameters.size()) {
    const size_t p = state.parameters.size();
    for (size_t i = p; i < 2 * p; ++i)
      if (state.optimizer_state[i] < 0.0f) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", double(state.optimizer_state[i]));
        throw_error(DPT_ERROR_FORMAT, "checkpoint '" + path + "': optimizer.state[" + std::to_string(i) +
                                          "] is negative (" + value + "), an AdamW second moment");
      }
  }
  // A trainer with loss scaling resumes the saved scaler; from a checkpoint without one (another
  // precision's) it starts from its initial scale. A trainer without ignores it.
  if (trainer.config().loss_scaling.enabled && tensors.count("trainer.loss_scaler") != 0) {
    const std::vector<double> scaler =
        values<double>(find(tensors, "trainer.loss_scaler", ElementType::kF64, path));
    DPT_REQUIRE(scaler.size() == 2 && valid_loss_scale(scaler[0]) && scaler[1] >= 0 && scaler[1] < 0x1p53 &&
                    scaler[1] == std::floor(scaler[1]),
                DPT_ERROR_FORMAT,
                "checkpoint '" + path +
                    "': trainer.loss_scaler must hold a power-of-two scale from 1 to 2^64 and a whole count");
    state.loss_scale = scaler[0];
    state.loss_scale_growth_tracker = uint64_t(scaler[1]);
  }
  state.optimizer_steps = counters[kOptimizerSteps];
  state.epochs_done = counters[kEpochsDone];
  state.samples_into_epoch = counters[kSamplesIntoEpoch];
  state.seed = counters[kSeed];
  trainer.load_state(state);  // checks the sizes against the trainer before changing anything
}

}  // namespace dpt
