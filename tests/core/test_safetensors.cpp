// Weights as safetensors, to and from PyTorch (docs/safetensors.md). The model is a small residual net whose
// node names are PyTorch's module names; tests/tools/pytorch_safetensors_fixture.py holds its PyTorch twin
// and wrote the committed fixture (tests/fixtures/safetensors): its weights as safetensors.torch.save_file
// wrote them (non-trivial BatchNorm running statistics, num_batches_tracked included), and four inputs with
// PyTorch's logits in evaluation mode.
//
// - PyTorch's file loads, and dptrain's logits agree with PyTorch's within 1e-5 of the largest |logit|
//   (PyTorch's own float32 logits are 1.2e-7 from its float64 ones: the tolerance leaves room for another
//   order of float32 sums, and catches any wrong weight, statistic or layout, which moves logits by 1e-2);
// - dptrain's file loads into a fresh trainer bitwise (parameters, buffers, logits), optimizer untouched;
// - dptrain's file is laid out as the format says, checked by a reader of its own in this test;
// - the load rules: missing, extra, misshapen tensors and other dtypes are refused naming the tensor;
//   num_batches_tracked of BatchNorm nodes is ignored; F64, F16 and BF16 are converted; non-finite values
//   are refused; malformed files (a table of them, every truncation of the fixture, a FIFO, a 3 GiB sparse
//   file) are refused without a crash, without reading or allocating their size, leaving the trainer as it
//   was and usable; I/O faults give DPT_ERROR_IO;
// - test_live_pytorch_round_trip (CTest's test_safetensors_pytorch): where PyTorch and safetensors import
//   ($DPTRAIN_PYTHON, default python3), PyTorch loads dptrain's file with load_state_dict(strict=True) and
//   its logits agree with dptrain's; skipped (reported as skipped) otherwise.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "graph/op_def.hpp"
#include "io/safetensors.hpp"
#include "io/trainer_safetensors.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

namespace st = dpt::safetensors;
using Bytes = std::vector<unsigned char>;

constexpr double kTolerance = 1e-5;
constexpr size_t kSamples = 4, kInput = 3 * 8 * 8, kClasses = 5;
const std::string kFixtureDir = DPT_FIXTURE_DIR;
const std::string kWeights = kFixtureDir + "/small_resnet.safetensors";
const std::string kIo = kFixtureDir + "/small_resnet_io.safetensors";
std::string g_dir;  // this run's temporary directory

std::string temp(const std::string &name) {
  return g_dir + "/" + name;
}

// conv (no bias) - bn - relu, then a residual block of 8 channels at stride 2 with a 1x1 projection
// shortcut, global average pooling and fc: torch names (the fixture script's SmallResNet).
size_t conv(dpt::ModelSpec &m, size_t input, size_t channels, size_t kernel, size_t stride, size_t padding,
            const std::string &name) {
  dpt::OpAttrs a;
  a.ints[0] = int64_t(channels);
  a.ints[1] = int64_t(kernel);
  a.ints[2] = int64_t(stride);
  a.ints[3] = int64_t(padding);
  a.ints[4] = 0;
  return m.add(dpt::op_def("conv2d"), {input}, a, name);
}

dpt::ModelSpec small_resnet() {
  dpt::ModelSpec m(dpt::Shape{3, 8, 8});
  size_t x = conv(m, 0, 4, 3, 1, 1, "conv1");
  x = m.add_op("relu", {m.add_batch_norm(x, 1e-5, 0.1, "bn1")}, "relu");
  size_t y = conv(m, x, 8, 3, 2, 1, "block.conv1");
  y = m.add_op("relu", {m.add_batch_norm(y, 1e-5, 0.1, "block.bn1")}, "block.relu1");
  y = m.add_batch_norm(conv(m, y, 8, 3, 1, 1, "block.conv2"), 1e-5, 0.1, "block.bn2");
  const size_t s =
      m.add_batch_norm(conv(m, x, 8, 1, 2, 0, "block.downsample.0"), 1e-5, 0.1, "block.downsample.1");
  y = m.add_op("relu", {m.add_op("add", {y, s}, "block.add")}, "block.relu2");
  y = m.add_op("global_avg_pool", {y}, "avgpool");
  dpt::OpAttrs fc;
  fc.ints[0] = int64_t(kClasses);
  fc.ints[1] = 1;
  m.add(dpt::op_def("dense"), {y}, fc, "fc");
  return m;
}

std::unique_ptr<dpt::Trainer> make_trainer(size_t devices, uint64_t seed) {
  dpt::TrainerConfig c;
  c.seed = seed;
  c.optimizer.learning_rate = 0.05f;
  c.optimizer.momentum = 0.9f;
  return std::make_unique<dpt::Trainer>(std::make_shared<dpt::Context>(dpt::ContextConfig{devices, 0}),
                                        small_resnet(), c);
}

Bytes read_bytes(const std::string &path) {
  return dpt::file_io::read_file(path, 1 << 26);
}

void write_bytes(const std::string &path, const Bytes &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  assert_non_null(f);
  if (!bytes.empty()) assert_int_equal(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  assert_int_equal(std::fclose(f), 0);
}

// A file from a header text (padded with spaces to a multiple of 8 bytes unless pad is false) and data.
Bytes raw_file(std::string header, const Bytes &data, bool pad = true) {
  if (pad) header.resize((header.size() + 7) / 8 * 8, ' ');
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A decoded tensor with its bytes.
struct Named {
  std::string name;
  st::DType dtype = st::DType::kF32;
  std::vector<uint64_t> shape;
  Bytes bytes;
};

std::vector<Named> decode_file(const std::string &path) {
  const Bytes image = read_bytes(path);
  const st::Header h = st::decode(image.data(), image.size(), path);
  std::vector<Named> out;
  for (const st::Entry &e : h.tensors)
    out.push_back(
        {e.name, e.dtype, e.shape,
         Bytes(image.begin() + long(h.data_offset + e.begin), image.begin() + long(h.data_offset + e.end))});
  return out;
}

Bytes encode(const std::vector<Named> &tensors) {
  std::vector<st::TensorView> views;
  for (const Named &t : tensors) views.push_back({t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size()});
  return st::encode(views, {{"format", "pt"}});
}

std::vector<float> floats(const Bytes &b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

Bytes bytes_of(const std::vector<float> &v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

const Named &find(const std::vector<Named> &tensors, const std::string &name) {
  for (const Named &t : tensors)
    if (t.name == name) return t;
  print_error("no tensor '%s'\n", name.c_str());
  fail();
  return tensors.front();
}

Named &find(std::vector<Named> &tensors, const std::string &name) {
  return const_cast<Named &>(find(static_cast<const std::vector<Named> &>(tensors), name));
}

// Every replica's parameters and buffers.
struct Weights {
  std::vector<std::vector<float>> parameters, buffers;
  bool operator==(const Weights &) const = default;
};

Weights weights(const dpt::Trainer &t) {
  Weights w;
  for (size_t r = 0; r < t.device_count(); ++r) {
    w.parameters.emplace_back(t.spec().parameter_count());
    w.buffers.emplace_back(t.spec().buffer_count());
    t.get_parameters(r, w.parameters.back().data());
    t.get_buffers(r, w.buffers.back().data());
  }
  return w;
}

std::vector<float> predict(dpt::Trainer &t, const std::vector<float> &inputs) {
  std::vector<float> logits(kSamples * kClasses);
  t.predict(inputs.data(), kSamples, logits.data());
  return logits;
}

// Loading path must fail with want, name every text of names, and leave the trainer as it was.
void expect_refused(dpt::Trainer &t, const std::string &path, dpt_status want,
                    const std::vector<std::string> &names, const char *what) {
  const Weights before = weights(t);
  const std::string message = dpt_test::expect_error([&] { dpt::load_safetensors(t, path); }, want, what);
  for (const std::string &n : names)
    if (message.find(n) == std::string::npos) {
      print_error("%s: the message \"%s\" does not name %s\n", what, message.c_str(), n.c_str());
      fail();
    }
  if (!(weights(t) == before)) {
    print_error("%s: the failed load changed the trainer\n", what);
    fail();
  }
}

// ---- PyTorch's file and PyTorch's logits -------------------------------------------------------------

void test_pytorch_weights_give_pytorch_logits(void **) {
  const std::vector<Named> fixture = decode_file(kWeights), io = decode_file(kIo);
  const std::vector<float> inputs = floats(find(io, "inputs").bytes);
  const std::vector<float> torch32 = floats(find(io, "logits").bytes);
  assert_int_equal(inputs.size(), kSamples * kInput);
  assert_int_equal(find(io, "logits_f64").dtype, st::DType::kF64);
  std::vector<double> torch64(torch32.size());
  std::memcpy(torch64.data(), find(io, "logits_f64").bytes.data(), torch64.size() * sizeof(double));

  auto t = make_trainer(2, 1);
  dpt::load_safetensors(*t, kWeights);
  // Every parameter and buffer is the file's tensor of its name, bitwise, on every replica.
  const Weights w = weights(*t);
  for (size_t r = 0; r < t->device_count(); ++r) {
    for (const dpt::NamedTensor &n : dpt::named_parameters(t->spec()))
      assert_memory_equal(w.parameters[r].data() + n.offset, find(fixture, n.name).bytes.data(),
                          n.shape.size() * 4);
    for (const dpt::NamedTensor &n : dpt::named_buffers(t->spec()))
      assert_memory_equal(w.buffers[r].data() + n.offset, find(fixture, n.name).bytes.data(),
                          n.shape.size() * 4);
  }
  const std::vector<float> logits = predict(*t, inputs);
  double scale = 0;
  for (double v : torch64) scale = std::max(scale, std::fabs(v));
  dpt_test::Comparison vs32("dptrain vs PyTorch float32 logits", kTolerance, scale);
  dpt_test::Comparison vs64("dptrain vs PyTorch float64 logits", kTolerance, scale);
  dpt_test::Comparison torch("(PyTorch float32 vs float64)", kTolerance, scale);
  for (size_t i = 0; i < logits.size(); ++i) {
    const std::string where =
        "sample " + std::to_string(i / kClasses) + " class " + std::to_string(i % kClasses);
    vs32.add(logits[i], torch32[i], where);
    vs64.add(logits[i], torch64[i], where);
    torch.add(torch32[i], torch64[i], where);
  }
  vs32.finish();
  vs64.finish();
  torch.finish();
}

// ---- dptrain's file: round trip and layout ----------------------------------------------------------

// A trainer with the fixture's weights, trained 2 steps: parameters, running statistics and the step counter
// are dptrain's own.
std::unique_ptr<dpt::Trainer> trained(size_t devices) {
  const std::vector<float> inputs = floats(find(decode_file(kIo), "inputs").bytes);
  auto t = make_trainer(devices, 3);
  dpt::load_safetensors(*t, kWeights);
  const int32_t labels[kSamples] = {0, 1, 2, 3};
  for (int i = 0; i < 2; ++i) t->step(inputs.data(), labels, kSamples);
  return t;
}

void test_round_trip_is_bitwise(void **) {
  const std::vector<float> inputs = floats(find(decode_file(kIo), "inputs").bytes);
  auto a = trained(2);
  const std::string path = temp("round-trip.safetensors");
  dpt::save_safetensors(*a, path);
  auto b = make_trainer(2, 99);
  const dpt::TrainerState before = b->save_state();
  dpt::load_safetensors(*b, path);
  assert_true(weights(*b) == weights(*a));
  const std::vector<float> la = predict(*a, inputs), lb = predict(*b, inputs);
  assert_memory_equal(la.data(), lb.data(), la.size() * sizeof(float));
  // Weights only: the optimizer state (zero momentum) and the counters of b are its own.
  const dpt::TrainerState after = b->save_state();
  assert_true(after.optimizer_state == before.optimizer_state);
  assert_int_equal(after.optimizer_steps, 0);
  assert_int_equal(a->optimizer_steps(), 2);
  // Saving again gives the same bytes; the file is readable with fewer devices.
  const std::string again = temp("round-trip-again.safetensors");
  dpt::save_safetensors(*b, again);
  auto c = make_trainer(1, 5);
  dpt::load_safetensors(*c, again);
  assert_true(weights(*c).parameters[0] == weights(*a).parameters[0]);
  assert_true(weights(*c).buffers[0] == weights(*a).buffers[0]);
  Bytes x = read_bytes(path), y = read_bytes(again);
  // (b's counter is 0, a's 2: only the num_batches_tracked values differ)
  assert_int_equal(x.size(), y.size());
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) differing += x[i] != y[i];
  assert_int_equal(differing, 4);  // one byte of each of the 4 counters
}

// The integer after text at the start of s[at...], which must be there; at moves past it.
uint64_t number_after(const std::string &s, size_t &at, const std::string &text) {
  assert_true(s.compare(at, text.size(), text) == 0);
  at += text.size();
  size_t used = 0;
  const uint64_t v = std::stoull(s.substr(at, 24), &used);
  at += used;
  return v;
}

void test_saved_file_follows_the_spec(void **) {
  auto t = trained(2);
  const std::string path = temp("layout.safetensors");
  dpt::save_safetensors(*t, path);
  const Bytes file = read_bytes(path);
  const Weights w = weights(*t);

  // 8 bytes of little-endian N, N bytes of JSON beginning with '{', padded with spaces to a multiple of 8.
  assert_true(file.size() >= 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(file[size_t(i)]) << (8 * i);
  assert_true(n % 8 == 0 && 8 + n <= file.size());
  const std::string header(file.begin() + 8, file.begin() + 8 + long(n));
  assert_int_equal(header[0], '{');
  const size_t close = header.find_last_not_of(' ');
  assert_int_equal(header[close], '}');
  assert_true(n - close - 1 < 8);
  const uint64_t data = file.size() - 8 - n;
  const std::string metadata =
      "\"__metadata__\":{\"format\":\"pt\",\"dptrain.model\":\"" + t->spec().describe() + "\"}";
  assert_true(header.compare(1, metadata.size(), metadata) == 0);

  // Each tensor's entry, its bytes the trainer's; together they cover the data area without gaps.
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  const auto entry = [&](const std::string &name, const std::string &dtype, const dpt::Shape &shape,
                         const void *expected, size_t bytes) {
    std::string text = "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[";
    for (size_t i = 0; i < shape.rank(); ++i) {
      if (i != 0) text += ',';
      text += std::to_string(shape[i]);
    }
    text += "],\"data_offsets\":[";
    size_t at = header.find(text);
    if (at == std::string::npos) {
      print_error("no entry %s... in %s\n", text.c_str(), header.c_str());
      fail();
    }
    const uint64_t begin = number_after(header, at, text), end = number_after(header, at, ",");
    assert_true(header.compare(at, 2, "]}") == 0);
    assert_true(end - begin == bytes && end <= data);
    assert_memory_equal(file.data() + 8 + n + begin, expected, bytes);
    spans.push_back({begin, end, name});
  };
  for (const dpt::NamedTensor &p : dpt::named_parameters(t->spec()))
    entry(p.name, "F32", p.shape, w.parameters[0].data() + p.offset, p.shape.size() * 4);
  for (const dpt::NamedTensor &b : dpt::named_buffers(t->spec()))
    entry(b.name, "F32", b.shape, w.buffers[0].data() + b.offset, b.shape.size() * 4);
  const int64_t steps = 2;
  for (const char *bn : {"bn1", "block.bn1", "block.bn2", "block.downsample.1"})
    entry(std::string(bn) + ".num_batches_tracked", "I64", dpt::Shape{}, &steps, 8);
  size_t entries = 0;
  for (size_t at = header.find("\"data_offsets\""); at != std::string::npos;
       at = header.find("\"data_offsets\"", at + 1))
    ++entries;
  assert_int_equal(entries, spans.size());  // nothing else
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
  uint64_t at = 0;
  for (const Span &s : spans) {
    assert_true(s.begin == at);
    at = s.end;
  }
  assert_true(at == data);
  // As safetensors' own writer lays them out: the I64 counters first (by name), then the F32 tensors by name.
  assert_string_equal(spans[0].name.c_str(), "block.bn1.num_batches_tracked");
  assert_string_equal(spans[3].name.c_str(), "bn1.num_batches_tracked");
  for (size_t i = 5; i < spans.size(); ++i) assert_true(spans[i - 1].name < spans[i].name);
}

// ---- the load rules ---------------------------------------------------------------------------------

void test_load_rules(void **) {
  const std::vector<Named> fixture = decode_file(kWeights);
  const std::vector<float> inputs = floats(find(decode_file(kIo), "inputs").bytes);
  auto t = make_trainer(2, 1);
  auto reference = make_trainer(2, 1);
  dpt::load_safetensors(*reference, kWeights);
  const std::string path = temp("rules.safetensors");
  const auto variant = [&](auto &&change) {
    std::vector<Named> v = fixture;
    change(v);
    write_bytes(path, encode(v));
  };
  const auto without = [](std::vector<Named> &v, const std::string &name) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Named &x) { return x.name == name; }), v.end());
  };

  // Refused, naming the tensors.
  variant([&](std::vector<Named> &v) { without(v, "block.bn2.running_var"); });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'block.bn2.running_var'"}, "a buffer missing");
  variant([&](std::vector<Named> &v) {
    without(v, "conv1.weight");
    without(v, "fc.bias");
  });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'conv1.weight'", "'fc.bias'"}, "parameters missing");
  variant([&](std::vector<Named> &v) { v.push_back({"head.weight", st::DType::kF32, {1}, Bytes(4)}); });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'head.weight'"}, "a tensor the model does not have");
  variant([&](std::vector<Named> &v) {
    v.push_back({"fc.num_batches_tracked", st::DType::kI64, {}, Bytes(8)});
  });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'fc.num_batches_tracked'"},
                 "a counter of no batch_norm");
  variant([&](std::vector<Named> &v) {
    find(v, "bn1.num_batches_tracked") = {"bn1.num_batches_tracked", st::DType::kF32, {}, Bytes(4)};
  });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'bn1.num_batches_tracked'"}, "a float counter");
  variant([&](std::vector<Named> &v) {
    find(v, "bn1.num_batches_tracked") = {"bn1.num_batches_tracked", st::DType::kI64, {2}, Bytes(16)};
  });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'bn1.num_batches_tracked'"}, "two counters");
  variant([&](std::vector<Named> &v) { find(v, "fc.weight").shape = {8, 5}; });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'fc.weight'", "[8, 5]", "[5, 8]"},
                 "a transposed weight");
  variant([&](std::vector<Named> &v) { find(v, "conv1.weight").shape = {4, 27}; });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'conv1.weight'"}, "a flattened conv weight");
  variant([&](std::vector<Named> &v) { find(v, "fc.bias").dtype = st::DType::kI32; });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'fc.bias'", "I32"}, "an integer parameter");
  variant([&](std::vector<Named> &v) {
    Named &b = find(v, "fc.bias");
    b.dtype = st::DType::kU8;
    b.shape = {20};
  });
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'fc.bias'"}, "bytes for a parameter");
  write_bytes(path, raw_file("{}", {}));
  expect_refused(*t, path, DPT_ERROR_INVALID_ARGUMENT, {"'conv1.weight'", "and 17 more"},
                 "a file without tensors");
  // Non-finite values: refused as checkpoints refuse them, naming the value.
  const auto poison = [&](const std::string &name, size_t i, float value) {
    variant([&](std::vector<Named> &v) { std::memcpy(find(v, name).bytes.data() + 4 * i, &value, 4); });
  };
  poison("bn1.running_var", 2, std::numeric_limits<float>::quiet_NaN());
  expect_refused(*t, path, DPT_ERROR_FORMAT, {"bn1.running_var[2] is NaN"}, "a NaN running variance");
  poison("fc.weight", 39, -std::numeric_limits<float>::infinity());
  expect_refused(*t, path, DPT_ERROR_FORMAT, {"fc.weight[39] is -Inf"}, "an infinite weight");
  variant([&](std::vector<Named> &v) {
    Named &b = find(v, "fc.bias");
    std::vector<double> d(5, 0.5);
    d[1] = 1e300;
    b.dtype = st::DType::kF64;
    b.bytes.resize(40);
    std::memcpy(b.bytes.data(), d.data(), 40);
  });
  expect_refused(*t, path, DPT_ERROR_FORMAT, {"fc.bias[1]", "beyond the range of F32"}, "an F64 beyond F32");

  // Accepted: without the counters, with any integer scalar as counter; F64, F16, BF16 converted.
  variant([&](std::vector<Named> &v) {
    for (const char *bn : {"bn1", "block.bn1", "block.bn2", "block.downsample.1"})
      without(v, std::string(bn) + ".num_batches_tracked");
  });
  dpt::load_safetensors(*t, path);
  assert_true(weights(*t) == weights(*reference));
  variant([&](std::vector<Named> &v) {
    find(v, "bn1.num_batches_tracked") = {"bn1.num_batches_tracked", st::DType::kU8, {1}, Bytes(1, 9)};
    find(v, "block.bn2.num_batches_tracked") = {
        "block.bn2.num_batches_tracked", st::DType::kI32, {}, Bytes(4, 0xFF)};
  });
  dpt::load_safetensors(*t, path);
  assert_true(weights(*t) == weights(*reference));
  variant([&](std::vector<Named> &v) {
    for (Named &x : v) {
      if (x.dtype != st::DType::kF32) continue;
      const std::vector<float> f = floats(x.bytes);
      x.dtype = st::DType::kF64;
      x.bytes.resize(f.size() * 8);
      for (size_t i = 0; i < f.size(); ++i) {
        const double d = f[i];
        std::memcpy(x.bytes.data() + 8 * i, &d, 8);
      }
    }
  });
  dpt::load_safetensors(*t, path);
  assert_true(weights(*t) == weights(*reference));  // float -> double -> float is exact
  {
    // F16: 1.5, -0, the smallest subnormal 2^-24, the largest 65504, -2; BF16: 1.5, -0, 2^-133, -3.
    const uint16_t half[5] = {0x3E00, 0x8000, 0x0001, 0x7BFF, 0xC000};
    const uint16_t bf16[5] = {0x3FC0, 0x8000, 0x0001, 0xC040, 0x3F80};
    const float want_half[5] = {1.5f, -0.0f, std::ldexp(1.0f, -24), 65504.0f, -2.0f};
    const float want_bf16[5] = {1.5f, -0.0f, std::ldexp(1.0f, -133), -3.0f, 1.0f};
    for (int bf = 0; bf < 2; ++bf) {
      variant([&](std::vector<Named> &v) {
        Named &b = find(v, "fc.bias");
        b.dtype = bf ? st::DType::kBF16 : st::DType::kF16;
        b.bytes.resize(10);
        std::memcpy(b.bytes.data(), bf ? bf16 : half, 10);
      });
      dpt::load_safetensors(*t, path);
      std::vector<float> p(t->parameter_count());
      t->get_parameters(1, p.data());
      for (const dpt::NamedTensor &n : dpt::named_parameters(t->spec()))
        if (n.name == "fc.bias") assert_memory_equal(p.data() + n.offset, bf ? want_bf16 : want_half, 20);
    }
  }
  // A model with two nodes of one name has two tensors of one name: neither saved nor loaded.
  {
    dpt::ModelSpec twice(dpt::Shape{1, 2, 2});
    dpt::OpAttrs dense;
    dense.ints[0] = 3;
    dense.ints[1] = 1;
    bool built = true;
    try {
      twice.add(dpt::op_def("dense"), {0}, dense, "a");
      twice.add(dpt::op_def("dense"), {1}, dense, "a");
    } catch (const dpt::Error &) {
      built = false;  // (refused when it is built: nothing to check here)
    }
    if (built) {
      dpt::Trainer u(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), twice, dpt::TrainerConfig{});
      dpt_test::expect_error([&] { dpt::save_safetensors(u, path); }, DPT_ERROR_INVALID_ARGUMENT,
                             "save, twice");
      write_bytes(path, raw_file("{}", {}));
      expect_refused(u, path, DPT_ERROR_INVALID_ARGUMENT, {"two tensors named 'a.weight'"}, "load, twice");
    }
  }
  // Still usable: it steps, and predicts what the reference predicts once given the same weights.
  dpt::load_safetensors(*t, kWeights);
  assert_true(predict(*t, inputs) == predict(*reference, inputs));
  const int32_t labels[kSamples] = {4, 3, 2, 1};
  t->step(inputs.data(), labels, kSamples);
}

// Files that are not valid safetensors: DPT_ERROR_FORMAT (the message saying why), the trainer untouched.
// A tied parameter (GPT-2's LM head on the token embedding): saved once, under the source's name; loaded
// from either name (PyTorch's save_model keeps one of them), or from both when they are equal.
void test_tied_parameters(void **) {
  dpt::ModelSpec m(dpt::Shape{4}, dpt::DType::kI32);
  dpt::OpAttrs table;
  table.ints[0] = 6;
  table.ints[1] = 3;
  m.add(dpt::op_def("token_embedding"), {0}, table, "wte");
  dpt::OpAttrs head;
  head.ints[0] = 6;
  m.add(dpt::op_def("linear"), {m.output_tensor()}, head, "lm_head");
  m.tie("lm_head.weight", "wte.weight");
  const auto trainer = [&](uint64_t seed) {
    dpt::TrainerConfig c;
    c.seed = seed;
    return std::make_unique<dpt::Trainer>(std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0}), m, c);
  };
  auto a = trainer(1), b = trainer(2);
  const std::string path = temp("tied.safetensors");
  dpt::save_safetensors(*a, path);
  std::vector<Named> saved = decode_file(path);
  assert_int_equal(saved.size(), 1);
  assert_string_equal(saved[0].name.c_str(), "wte.weight");
  dpt::load_safetensors(*b, path);
  assert_true(weights(*a) == weights(*b));

  auto c = trainer(3);
  saved[0].name = "lm_head.weight";  // only the tied name
  write_bytes(path, encode(saved));
  dpt::load_safetensors(*c, path);
  assert_true(weights(*a) == weights(*c));

  Named copy = saved[0];
  saved[0].name = "wte.weight";
  saved.push_back(copy);  // both names, equal values
  write_bytes(path, encode(saved));
  auto d = trainer(4);
  dpt::load_safetensors(*d, path);
  assert_true(weights(*a) == weights(*d));

  saved[1].bytes[5] ^= 1;  // both names, different values
  write_bytes(path, encode(saved));
  expect_refused(*d, path, DPT_ERROR_INVALID_ARGUMENT, {"'lm_head.weight'", "'wte.weight'", "differ"},
                 "tied tensors that differ");
}

void test_malformed_files(void **) {
  auto t = make_trainer(2, 1);
  dpt::load_safetensors(*t, kWeights);
  const std::string path = temp("malformed.safetensors");
  const Bytes four(4, 0), eight(8, 0);
  const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  struct Row {
    const char *what;
    Bytes file;
    const char *says;
  };
  const std::vector<Row> rows = {
      {"an empty file", {}, "too short for the 8-byte header length"},
      {"7 bytes", Bytes(7, 1), "too short"},
      {"a header length of 0", Bytes(8, 0), "too short for a JSON object"},
      {"a header length of 2^64 - 1", Bytes(16, 0xFF), "exceeds the limit"},
      {"a header length above 100 MB",
       [] {
         Bytes b = raw_file("{}", {});
         b[0] = 0x01, b[1] = 0xE1, b[2] = 0xF5, b[3] = 0x05;  // 100000001
         return b;
       }(),
       "exceeds the limit"},
      {"a header longer than the file",
       [] {
         Bytes b = raw_file("{}", {});
         b[0] = 200;
         return b;
       }(),
       "truncated"},
      {"not an object", raw_file("[]", {}), "does not begin with '{'"},
      {"a space before the object", raw_file(" {}", {}), "does not begin with '{'"},
      {"an unfinished object", raw_file("{\"a\"", {}, false), "end of the header"},
      {"bytes of no tensor", raw_file("{}", four), "belong to no tensor"},
      {"a trailing comma", raw_file("{" + a + ",}", four), "expected a string"},
      {"a missing colon", raw_file(R"({"a" {}})", {}), "expected ':'"},
      {"garbage after the object", raw_file("{" + a + "}x", four), "after the end"},
      {"NUL padding", raw_file("{" + a + std::string("}\0\0\0", 4), four, false), "after the end"},
      {"an unknown dtype", raw_file(R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", four),
       "unknown dtype"},
      {"a lower-case dtype", raw_file(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", four),
       "unknown dtype"},
      {"a leading zero", raw_file(R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", four),
       "leading zero"},
      {"a negative dimension", raw_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four),
       "negative"},
      {"a fraction", raw_file(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", four),
       "fraction"},
      {"an exponent", raw_file(R"({"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})", four),
       "exponent"},
      {"2^64", raw_file(R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})", four),
       "exceeds 2^64"},
      {"three offsets", raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", four),
       "expected ']'"},
      {"one offset", raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", four),
       "expected ','"},
      {"reversed offsets", raw_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", four),
       "end before they begin"},
      {"no data_offsets", raw_file(R"({"a":{"dtype":"F32","shape":[1]}})", four), "has no data_offsets"},
      {"no shape", raw_file(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", four), "has no shape"},
      {"an unknown field", raw_file(R"({"a":{"dtype":"F32","shape":[1],"offsets":[0,4]}})", four),
       "unknown field"},
      {"a field twice",
       raw_file(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four), "twice"},
      {"a tensor twice", raw_file("{" + a + "," + a + "}", four), "appears twice"},
      {"__metadata__ twice", raw_file(R"({"__metadata__":{},"__metadata__":{}})", {}), "appears twice"},
      {"a metadata number", raw_file(R"({"__metadata__":{"format":1}})", {}), "not a string"},
      {"a metadata object", raw_file(R"({"__metadata__":{"format":{"a":"b"}}})", {}), "not a string"},
      {"a metadata key twice", raw_file(R"({"__metadata__":{"k":"a","k":"b"}})", {}), "twice"},
      {"metadata as a list", raw_file(R"({"__metadata__":["pt"]})", {}), "expected '{'"},
      {"a tensor that is not an object", raw_file(R"({"a":true})", {}), "expected '{'"},
      {"a dtype that is not a string", raw_file(R"({"a":{"dtype":{"F32":1}}})", {}), "expected a string"},
      {"overlapping tensors",
       raw_file(
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
           eight),
       "overlaps"},
      {"a gap", raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight), "gap"},
      {"a size that is not the shape's",
       raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four), "needs 8"},
      {"a tensor beyond the file",
       raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four), "beyond"},
      {"a shape of 2^65 elements",
       raw_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,4]}})", four),
       "more than 2^64"},
      {"2^61 F64",
       raw_file(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,4]}})", four),
       "overflows"},
      {"3 F4 elements", raw_file(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", Bytes(1)),
       "whole bytes"},
      {"invalid UTF-8", raw_file("{\"\xff\":{}}", {}), "invalid UTF-8"},
      {"overlong UTF-8", raw_file("{\"\xc0\xaf\":{}}", {}), "invalid UTF-8"},
      {"an encoded surrogate", raw_file("{\"\xed\xa0\x80\":{}}", {}), "invalid UTF-8"},
      {"a lone surrogate escape", raw_file(R"({"\ud800":{}})", {}), "surrogate"},
      {"a lone low surrogate", raw_file(R"({"\udc00x":{}})", {}), "surrogate"},
      {"a control character", raw_file("{\"a\x01\":{}}", {}), "control character"},
      {"an unknown escape", raw_file(R"({"\x41":{}})", {}), "unknown escape"},
      {"a short \\u escape", raw_file(R"({"\u12":{}})", {}), "4 hex digits"},
      {"an unfinished string", raw_file("{\"abc", {}, false), "inside a string"},
      {"a tensor of 4 GiB in a small file",
       raw_file(R"({"a":{"dtype":"U8","shape":[4294967296],"data_offsets":[0,4294967296]}})", four),
       "beyond"},
  };
  size_t problems = 0;
  for (const Row &row : rows) {
    write_bytes(path, row.file);
    const Weights before = weights(*t);
    try {
      dpt::load_safetensors(*t, path);
      print_error("%s: loaded\n", row.what);
      ++problems;
    } catch (const dpt::Error &e) {
      if (e.status() != DPT_ERROR_FORMAT || std::strstr(e.what(), row.says) == nullptr) {
        print_error("%s: status %d \"%s\", expected DPT_ERROR_FORMAT saying \"%s\"\n", row.what,
                    int(e.status()), e.what(), row.says);
        ++problems;
      }
      if (std::strchr(e.what(), '\n') != nullptr) {
        print_error("%s: the message has a newline\n", row.what);
        ++problems;
      }
    }
    if (!(weights(*t) == before)) {
      print_error("%s: the trainer changed\n", row.what);
      ++problems;
    }
  }
  if (problems != 0) {
    print_error("%zu of %zu rows failed\n", problems, rows.size());
    fail();
  }
  print_message("%zu malformed files refused\n", rows.size());
}

// What the format allows is read: whitespace anywhere, fields and keys in any order, the header's order
// unlike the data's, escapes in names, metadata of any strings, no padding, a header without __metadata__.
void test_every_valid_spelling_loads(void **) {
  const std::vector<Named> fixture = decode_file(kWeights);
  auto reference = make_trainer(1, 1), t = make_trainer(1, 2);
  dpt::load_safetensors(*reference, kWeights);
  // Data in reverse name order; the header lists the tensors in name order, fields reversed, pretty-printed.
  std::vector<const Named *> data_order;
  for (const Named &n : fixture) data_order.push_back(&n);
  std::sort(data_order.begin(), data_order.end(),
            [](const Named *x, const Named *y) { return x->name > y->name; });
  std::map<std::string, std::pair<uint64_t, uint64_t>> offsets;
  Bytes data;
  for (const Named *n : data_order) {
    offsets[n->name] = {data.size(), data.size() + n->bytes.size()};
    data.insert(data.end(), n->bytes.begin(), n->bytes.end());
  }
  std::string header =
      "{\n  \"__metadata__\" : { \"note\" : \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\/\" , "
      "\"format\":\"pt\"},\n";
  bool first = true;
  for (const auto &[name, span] : offsets) {
    const Named &n = find(fixture, name);
    std::string key = name;
    if (name == "bn1.weight") key = "\\u0062n1.w\\u0065ight";  // "bn1.weight", escaped
    if (!first) header += " ,\r\n";
    first = false;
    header += "\t\"" + key + "\" :\n    {\"data_offsets\" : [ " + std::to_string(span.first) + " , " +
              std::to_string(span.second) + " ], \"shape\": [";
    for (size_t i = 0; i < n.shape.size(); ++i) {
      if (i != 0) header += ", ";
      header += std::to_string(n.shape[i]);
    }
    header += "] ,\"dtype\":\"" + std::string(st::dtype_name(n.dtype)) + "\" }";
  }
  header += "\n}   ";
  const std::string path = temp("spellings.safetensors");
  for (bool pad : {true, false}) {
    std::string h = header;
    if (!pad && h.size() % 8 == 0) h += ' ';
    write_bytes(path, raw_file(h, data, pad));
    dpt::load_safetensors(*t, path);
    assert_true(weights(*t) == weights(*reference));
    t->set_parameters(std::vector<float>(t->parameter_count(), 0.0f).data());
  }
  // The decoder read the metadata as written.
  const Bytes image = raw_file(header, data);
  const st::Header h = st::decode(image.data(), image.size(), "spellings");
  assert_true(h.has_metadata && h.metadata.size() == 2);
  assert_string_equal(h.metadata[0].second.c_str(), "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" /");
}

// Every truncation of PyTorch's file, and the file with a byte more, are refused.
void test_truncated_and_extended_files(void **) {
  const Bytes whole = read_bytes(kWeights);
  auto t = make_trainer(1, 1);
  const Weights before = weights(*t);
  const std::string path = temp("cut.safetensors");
  write_bytes(path, whole);
  // Shrunk in place, from the end (rewriting a truncated file would make ext4 flush it every time).
  for (size_t size = whole.size(); size-- > 0;) {
    assert_int_equal(::truncate(path.c_str(), off_t(size)), 0);
    try {
      dpt::load_safetensors(*t, path);
      print_error("the first %zu bytes loaded\n", size);
      fail();
    } catch (const dpt::Error &e) {
      if (e.status() != DPT_ERROR_FORMAT) {
        print_error("the first %zu bytes: status %d (%s)\n", size, int(e.status()), e.what());
        fail();
      }
    }
  }
  Bytes longer = whole;
  longer.push_back(0);
  write_bytes(path, longer);
  expect_refused(*t, path, DPT_ERROR_FORMAT, {"belong to no tensor"}, "a byte more");
  assert_true(weights(*t) == before);
}

// A FIFO, a directory and /dev/zero are DPT_ERROR_IO at once (no blocking read); a missing file too; a
// failed read is DPT_ERROR_IO; a failed save leaves the previous file.
void test_files_that_are_not_files(void **) {
  auto t = make_trainer(1, 1);
  const std::string fifo = temp("fifo"), directory = temp("directory");
  assert_int_equal(mkfifo(fifo.c_str(), 0600), 0);
  assert_int_equal(mkdir(directory.c_str(), 0700), 0);
  expect_refused(*t, fifo, DPT_ERROR_IO, {"is not a regular file (a FIFO)"}, "a FIFO");
  expect_refused(*t, directory, DPT_ERROR_IO, {"(a directory)"}, "a directory");
  expect_refused(*t, "/dev/zero", DPT_ERROR_IO, {"(a character device)"}, "/dev/zero");
  expect_refused(*t, temp("missing"), DPT_ERROR_IO, {"cannot open"}, "a missing file");
  namespace io = dpt::file_io;
  for (uint64_t nth = 1; nth <= 3; ++nth) {  // the prefix, the header, the first tensor
    io::clear_faults();
    io::inject_fault(io::Op::kRead, nth, EIO);
    expect_refused(*t, kWeights, DPT_ERROR_IO, {"cannot read"}, "a failed read");
  }
  io::clear_faults();
  const std::string path = temp("saved.safetensors");
  dpt::save_safetensors(*t, path);
  const Bytes before = read_bytes(path);
  dpt::load_safetensors(*t, kWeights);
  io::clear_faults();
  io::inject_fault(io::Op::kRename, 1, EIO);
  dpt_test::expect_error([&] { dpt::save_safetensors(*t, path); }, DPT_ERROR_IO, "a failed rename");
  io::clear_faults();
  assert_true(read_bytes(path) == before);
  dpt_test::expect_error([&] { dpt::save_safetensors(*t, directory + "/no/such/dir/x.safetensors"); },
                         DPT_ERROR_IO, "a directory that does not exist");
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A 3 GiB sparse file whose header declares one 3 GiB tensor (of the model's name, or another), and one of
// zeros: refused in well under a second, without reading or allocating the data (peak RSS grows < 64 MiB).
void test_huge_files_refused_unread(void **) {
  auto t = make_trainer(1, 1);
  const std::string path = temp("huge.safetensors");
  const uint64_t huge = uint64_t(3) << 30;
  const struct {
    std::string header;
    dpt_status want;
  } cases[] = {
      {R"({"fc.weight":{"dtype":"F32","shape":[805306368],"data_offsets":[0,3221225472]}})",
       DPT_ERROR_INVALID_ARGUMENT},
      {R"({"x":{"dtype":"U8","shape":[3221225472],"data_offsets":[0,3221225472]}})",
       DPT_ERROR_INVALID_ARGUMENT},
      {"", DPT_ERROR_FORMAT},
  };
  const long rss_before = peak_rss_kib();
  for (const auto &c : cases) {
    const Bytes head = c.header.empty() ? Bytes(8, 0) : raw_file(c.header, {});
    write_bytes(path, head);
    const int fd = ::open(path.c_str(), O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(::ftruncate(fd, off_t(head.size() + (c.header.empty() ? huge - 8 : huge))), 0);
    ::close(fd);
    const auto start = std::chrono::steady_clock::now();
    expect_refused(*t, path, c.want, {}, c.header.empty() ? "3 GiB of zeros" : c.header.c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    assert_true(seconds < 2.0);
  }
  assert_true(peak_rss_kib() - rss_before < 64 * 1024);
  std::remove(path.c_str());
}

// ---- PyTorch, live ----------------------------------------------------------------------------------

// The Python of the live test ($DPTRAIN_PYTHON, else python3) and whether it imports torch and safetensors.
// Static: CMocka's skip() leaves by longjmp, which runs no destructor, so no string may be alive in the
// test function when it skips (ASan reports it as a leak, and the test as failed).
struct LivePython {
  std::string name;
  bool imports = false;
};
const LivePython &live_python() {
  static const LivePython python = [] {
    const char *env = std::getenv("DPTRAIN_PYTHON");
    LivePython p{env != nullptr && *env != '\0' ? env : "python3", false};
    p.imports = std::system(("'" + p.name + "' -c 'import torch, safetensors' >/dev/null 2>&1").c_str()) == 0;
    return p;
  }();
  return python;
}

void test_live_pytorch_round_trip(void **) {
  if (!live_python().imports) {
    print_message("PyTorch and safetensors do not import with %s (set DPTRAIN_PYTHON): skipped\n",
                  live_python().name.c_str());
    skip();
  }
  const std::string &python = live_python().name;
  // dptrain's own weights (trained from PyTorch's), and dptrain's logits for the fixture's inputs.
  const std::vector<float> inputs = floats(find(decode_file(kIo), "inputs").bytes);
  auto t = trained(2);
  const std::string weights_path = temp("live.safetensors"), io_path = temp("live_io.safetensors");
  dpt::save_safetensors(*t, weights_path);
  const std::vector<float> logits = predict(*t, inputs);
  write_bytes(io_path, encode({{"inputs", st::DType::kF32, {kSamples, 3, 8, 8}, bytes_of(inputs)},
                               {"logits", st::DType::kF32, {kSamples, kClasses}, bytes_of(logits)}}));
  const std::string command = "'" + python + "' '" + std::string(DPT_FIXTURE_SCRIPT) + "' check '" +
                              weights_path + "' '" + io_path + "'";
  print_message("%s\n", command.c_str());
  std::fflush(stdout);
  const int status = std::system(command.c_str());
  assert_int_equal(status, 0);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "--only") == 0) {
    cmocka_set_test_filter(argv[2]);
  } else if (argc == 3 && std::strcmp(argv[1], "--skip") == 0) {
    cmocka_set_skip_filter(argv[2]);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--only PATTERN | --skip PATTERN]\n", argv[0]);
    return 2;
  }
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dpt-safetensors-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    return 2;
  }
  g_dir = pattern;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pytorch_weights_give_pytorch_logits),
      cmocka_unit_test(test_round_trip_is_bitwise),
      cmocka_unit_test(test_saved_file_follows_the_spec),
      cmocka_unit_test(test_load_rules),
      cmocka_unit_test(test_tied_parameters),
      cmocka_unit_test(test_malformed_files),
      cmocka_unit_test(test_every_valid_spelling_loads),
      cmocka_unit_test(test_truncated_and_extended_files),
      cmocka_unit_test(test_files_that_are_not_files),
      cmocka_unit_test(test_huge_files_refused_unread),
      cmocka_unit_test(test_live_pytorch_round_trip),
  };
  const int failed = cmocka_run_group_tests(tests, nullptr, nullptr);
  std::error_code ignored;
  std::filesystem::remove_all(g_dir, ignored);
  return failed;
}
