#include "io/trainer_safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/float16.hpp"
#include "io/json_header.hpp"
#include "io/safetensors.hpp"

namespace dpt {

static_assert(std::endian::native == std::endian::little, "safetensors holds little-endian tensors");

namespace {

using StDType = safetensors::DType;

// PyTorch's BatchNorm counter, written for (and ignored from) every batch_norm node.
constexpr const char *kBatchCounter = ".num_batches_tracked";

bool is_batch_norm(const Node &n) {
  return std::strcmp(n.op->name, "batch_norm") == 0;
}

std::vector<uint64_t> dims(const Shape &s) {
  std::vector<uint64_t> d;
  for (size_t i = 0; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}

std::string shape_text(const std::vector<uint64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string quoted(const std::string &name) {
  std::string q(1, '\'');  // (not "'" + ...: GCC 12 warns falsely on it, -Wrestrict)
  q += json::printable(name);
  q += '\'';
  return q;
}

// "'a', 'b' and 3 more" (at most five names).
std::string name_list(const std::vector<std::string> &names) {
  std::string s;
  const size_t shown = std::min<size_t>(names.size(), 5);
  for (size_t i = 0; i < shown; ++i) {
    if (i != 0) s += ", ";
    s += quoted(names[i]);
  }
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

// The count elements of a tensor of dtype (F64, F16 or BF16) at bytes, as F32 (F64 rounded to nearest;
// a finite value beyond the F32 range is refused).
void convert(StDType dtype, const unsigned char *bytes, size_t count, float *out, const std::string &tensor) {
  for (size_t i = 0; i < count; ++i) {
    if (dtype == StDType::kF64) {
      double d;
      std::memcpy(&d, bytes + 8 * i, 8);
      out[i] = float(d);
      if (std::isfinite(d) && !std::isfinite(out[i])) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", d);
        throw_error(DPT_ERROR_FORMAT,
                    tensor + "[" + std::to_string(i) + "] = " + value + " (F64) is beyond the range of F32");
      }
    } else {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      out[i] = dtype == StDType::kBF16 ? std::bit_cast<float>(uint32_t(h) << 16) : from_f16(h);
    }
  }
}

void require_finite(const float *v, size_t count, const std::string &tensor) {
  for (size_t i = 0; i < count; ++i)
    if (!std::isfinite(v[i]))
      throw_error(DPT_ERROR_FORMAT, tensor + "[" + std::to_string(i) + "] is " +
                                        (std::isnan(v[i]) ? "NaN"
                                         : v[i] > 0       ? "+Inf"
                                                          : "-Inf"));
}

// Where a tensor of the model goes.
struct Target {
  const NamedTensor *tensor;
  std::vector<float> *values;
};

}  // namespace

void save_safetensors(const Trainer &trainer, const std::string &path) {
  const ModelSpec &spec = trainer.spec();
  std::vector<float> parameters(spec.parameter_count()), buffers(spec.buffer_count());
  if (!parameters.empty()) trainer.get_parameters(0, parameters.data());
  if (!buffers.empty()) trainer.get_buffers(0, buffers.data());
  // Stages divided among the processes: every process gave its stages above; process 0 writes.
  if (trainer.stages_across_processes() && trainer.world()->rank() != 0) return;
  const std::vector<NamedTensor> named_p = named_parameters(spec), named_b = named_buffers(spec);
  std::vector<safetensors::TensorView> views;
  for (const NamedTensor &t : named_p)
    views.push_back(
        {t.name, StDType::kF32, dims(t.shape), parameters.data() + t.offset, t.shape.size() * sizeof(float)});
  for (const NamedTensor &t : named_b)
    views.push_back(
        {t.name, StDType::kF32, dims(t.shape), buffers.data() + t.offset, t.shape.size() * sizeof(float)});
  // torch's BatchNorm counts its training forward passes; dptrain's counter closest to it is the optimizer
  // step count (equal with accumulation 1 and no discarded steps). With a fixed momentum, as dptrain's
  // BatchNorm has, neither library reads it.
  const int64_t steps = int64_t(std::min<uint64_t>(trainer.optimizer_steps(), uint64_t(INT64_MAX)));
  for (const Node &n : spec.nodes())
    if (is_batch_norm(n)) views.push_back({n.name + kBatchCounter, StDType::kI64, {}, &steps, sizeof steps});
  const std::vector<std::pair<std::string, std::string>> metadata = {{"format", "pt"},
                                                                     {"dptrain.model", spec.describe()}};
  file_io::write_file_atomic(path, safetensors::encode(views, metadata));
}

void load_safetensors(Trainer &trainer, const std::string &path) {
  const std::string where = "safetensors file '" + path + "'";
  const auto shrank = [&] {
    throw_error(DPT_ERROR_FORMAT, where + " is truncated (it shrank while being read)");
  };

  // The header length, then the header, each checked before anything more is read or allocated.
  file_io::InputFile file(path);
  const uint64_t size = file.size();
  unsigned char prefix[safetensors::kPrefixBytes] = {};
  const size_t want = size_t(std::min<uint64_t>(size, sizeof prefix));
  if (file.read_fully(prefix, want) != want) shrank();
  const uint64_t json_bytes = safetensors::decode_header_length(prefix, size, where);
  std::vector<unsigned char> text(static_cast<size_t>(json_bytes));
  if (file.read_fully(text.data(), text.size()) != text.size()) shrank();
  const safetensors::Header header = safetensors::decode_header(text.data(), text.size(), size, where);

  // The file's tensors against the model's: names, then shapes and dtypes.
  const ModelSpec &spec = trainer.spec();
  const std::vector<NamedTensor> named_p = named_parameters(spec), named_b = named_buffers(spec);
  std::vector<float> parameters(spec.parameter_count()), buffers(spec.buffer_count());
  std::vector<std::pair<const NamedTensor *, std::vector<float> *>> model;
  for (const NamedTensor &t : named_p) model.emplace_back(&t, &parameters);
  for (const NamedTensor &t : named_b) model.emplace_back(&t, &buffers);
  std::map<std::string, Target> targets;
  for (const auto &[t, values] : model)
    DPT_REQUIRE(targets.emplace(t->name, Target{t, values}).second, DPT_ERROR_INVALID_ARGUMENT,
                "the model has two tensors named " + quoted(t->name) + " (two nodes of the same name?)");
  std::set<std::string> batch_norms;
  for (const Node &n : spec.nodes())
    if (is_batch_norm(n)) batch_norms.insert(n.name);
  const auto ignored = [&](const safetensors::Entry &e) {
    const size_t suffix = std::strlen(kBatchCounter);
    if (e.name.size() <= suffix || e.name.compare(e.name.size() - suffix, suffix, kBatchCounter) != 0)
      return false;
    uint64_t elements = 1;
    for (uint64_t d : e.shape) elements *= d;  // decode_header checked that this does not overflow
    return batch_norms.count(e.name.substr(0, e.name.size() - suffix)) != 0 &&
           safetensors::is_integer(e.dtype) && e.shape.size() <= 1 && e.bytes() <= 8 && elements == 1;
  };
  // A tied parameter's name stands for its source (PyTorch writes both names of a tied tensor, or one of
  // them: safetensors' save_model keeps one); when both are in the file, their values must be equal.
  std::map<std::string, std::string> alias;  // tied parameter -> source
  for (const ModelSpec::Tie &t : spec.ties()) alias.emplace(t.parameter, t.source);
  std::map<std::string, const safetensors::Entry *> found;  // by the model's name
  std::vector<const safetensors::Entry *> copies;           // a tied name whose source is in the file too
  std::vector<std::string> missing, unknown;
  for (const safetensors::Entry &e : header.tensors) {
    const auto a = alias.find(e.name);
    if (targets.count(e.name) != 0)
      found[e.name] = &e;
    else if (a == alias.end() && !ignored(e))
      unknown.push_back(e.name);
  }
  for (const safetensors::Entry &e : header.tensors) {
    const auto a = alias.find(e.name);
    if (a == alias.end()) continue;
    if (found.count(a->second) != 0)
      copies.push_back(&e);
    else
      found[a->second] = &e;
  }
  for (const auto &[t, values] : model)
    if (found.count(t->name) == 0) missing.push_back(t->name);
  if (!missing.empty() || !unknown.empty()) {
    std::string why;
    if (!missing.empty()) why = "it lacks the model's " + name_list(missing);
    if (!unknown.empty())
      why += std::string(why.empty() ? "it" : "; it") + " has " + name_list(unknown) +
             ", which the model does not have (only <batch_norm node>.num_batches_tracked is ignored)";
    throw_error(DPT_ERROR_INVALID_ARGUMENT, where + " does not fit the model: " + why);
  }
  const auto check_entry = [&](const safetensors::Entry &e, const NamedTensor &t) {
    const std::vector<uint64_t> want_shape = dims(t.shape);
    DPT_REQUIRE(e.shape == want_shape, DPT_ERROR_INVALID_ARGUMENT,
                where + ": tensor " + quoted(e.name) + " has the shape " + shape_text(e.shape) +
                    ", the model's is " + shape_text(want_shape));
    DPT_REQUIRE(e.dtype == StDType::kF32 || e.dtype == StDType::kF64 || e.dtype == StDType::kF16 ||
                    e.dtype == StDType::kBF16,
                DPT_ERROR_INVALID_ARGUMENT,
                where + ": tensor " + quoted(e.name) + " is " + safetensors::dtype_name(e.dtype) +
                    "; dptrain loads F32, F64, F16 and BF16");
  };
  for (const auto &[t, values] : model) check_entry(*found[t->name], *t);
  for (const safetensors::Entry *e : copies) check_entry(*e, *targets.at(alias.at(e->name)).tensor);

  // The data, in file order. The tensors read are the model's (at most twice its size, as F64, and a
  // tied tensor's second copy) and the ignored counters (8 bytes each at most): nothing the model does not
  // bound is ever allocated.
  std::vector<unsigned char> scratch;
  std::map<std::string, std::vector<float>> copy_values;  // of copies, by their name
  for (const safetensors::Entry &e : header.tensors) {
    if (e.bytes() == 0) continue;
    const auto a = alias.find(e.name);
    const bool copy = std::find(copies.begin(), copies.end(), &e) != copies.end();
    const auto it = a == alias.end() ? targets.find(e.name) : targets.find(a->second);
    const std::string tensor = where + ": " + json::printable(e.name);
    float *out = nullptr;
    if (copy) {
      std::vector<float> &v = copy_values[e.name];
      v.resize(it->second.tensor->shape.size());
      out = v.data();
    } else if (it != targets.end()) {
      out = it->second.values->data() + it->second.tensor->offset;
    }
    if (out != nullptr && e.dtype == StDType::kF32) {
      if (file.read_fully(out, size_t(e.bytes())) != e.bytes()) shrank();
      require_finite(out, it->second.tensor->shape.size(), tensor);
      continue;
    }
    scratch.resize(size_t(e.bytes()));
    if (file.read_fully(scratch.data(), scratch.size()) != scratch.size()) shrank();
    if (out == nullptr) continue;  // an ignored counter
    convert(e.dtype, scratch.data(), it->second.tensor->shape.size(), out, tensor);
    require_finite(out, it->second.tensor->shape.size(), tensor);
  }
  for (const auto &[name, values] : copy_values) {
    const Target &t = targets.at(alias.at(name));
    const float *loaded = t.values->data() + t.tensor->offset;
    DPT_REQUIRE(std::memcmp(loaded, values.data(), values.size() * sizeof(float)) == 0,
                DPT_ERROR_INVALID_ARGUMENT,
                where + ": " + quoted(name) + " and " + quoted(t.tensor->name) +
                    " are one tensor in the model (tied) but differ in the file");
  }

  // Only now, all of it checked, the replicas change.
  if (!parameters.empty()) trainer.set_parameters(parameters.data());
  if (!buffers.empty()) trainer.set_buffers(buffers.data());
}

}  // namespace dpt
