// Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/{checkpoint,idx,api,safetensors}. Run it
// after a format change: build/bin/fuzz_make_seeds tests/fuzz/corpus
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/file_io.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_format.hpp"
#include "io/safetensors.hpp"
#include "io/trainer_safetensors.hpp"

namespace {

using Bytes = std::vector<unsigned char>;

void write(const std::string &path, const Bytes &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

void be32(Bytes &b, uint32_t v) {
  for (int i = 3; i >= 0; --i) b.push_back(uint8_t(v >> (8 * i)));
}

Bytes gzip(const Bytes &plain) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);  // 31: gzip wrapper
  Bytes out(deflateBound(&z, uLong(plain.size())) + 32);
  z.next_in = const_cast<Bytes::value_type *>(plain.data());
  z.avail_in = uInt(plain.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The fuzz_idx input layout: one byte placing the split, then the image file, then the label file.
Bytes idx_input(const Bytes &images, const Bytes &labels) {
  const size_t size = 1 + images.size() + labels.size();
  // split = 1 + data[0] * (size - 1) / 255 must equal 1 + images.size(): pick the byte that gives it.
  for (int b = 0; b < 256; ++b)
    if (1 + (size_t(b) * (size - 1)) / 255 == 1 + images.size()) {
      Bytes out{uint8_t(b)};
      out.insert(out.end(), images.begin(), images.end());
      out.insert(out.end(), labels.begin(), labels.end());
      return out;
    }
  return {};
}

}  // namespace

int main(int argc, char **argv) {
  const std::string dir = argc > 1 ? argv[1] : "tests/fuzz/corpus";
  // Checkpoints of the fuzz_checkpoint model: complete, and cut short.
  dpt::ModelSpec m(dpt::Shape{1, 4, 4});
  m.add_dense(5);
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(3);
  dpt::TrainerConfig config;
  config.optimizer.momentum = 0.9f;
  dpt::Trainer trainer(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), m, config);
  dpt::save_checkpoint(trainer, dir + "/checkpoint/valid.ckpt");
  Bytes ckpt = dpt::file_io::read_file(dir + "/checkpoint/valid.ckpt", 1 << 20);
  write(dir + "/checkpoint/truncated.ckpt", Bytes(ckpt.begin(), ckpt.begin() + 200));
  // Valid CRCs around a NaN parameter: rejected on load.
  std::vector<dpt::Tensor> tensors = dpt::decode_checkpoint(ckpt, "seed");
  for (dpt::Tensor &t : tensors)
    if (t.name == "model.parameters") {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(t.bytes.data() + 7 * sizeof(float), &nan, sizeof nan);
    }
  write(dir + "/checkpoint/non-finite.ckpt", dpt::encode_checkpoint(tensors));

  // IDX: 3 images of 2x2 and their labels, plain and gzip.
  Bytes images, labels;
  be32(images, 0x803), be32(images, 3), be32(images, 2), be32(images, 2);
  for (int i = 0; i < 12; ++i) images.push_back(uint8_t(i * 20));
  be32(labels, 0x801), be32(labels, 3);
  labels.push_back(0), labels.push_back(2), labels.push_back(1);
  write(dir + "/idx/plain", idx_input(images, labels));
  write(dir + "/idx/gzip", idx_input(gzip(images), gzip(labels)));
  // Two gzip members (accepted: read as one stream), and a member without its 8-byte trailer (rejected).
  Bytes members = gzip(Bytes(images.begin(), images.begin() + 10));
  const Bytes rest = gzip(Bytes(images.begin() + 10, images.end()));
  members.insert(members.end(), rest.begin(), rest.end());
  write(dir + "/idx/gzip-members", idx_input(members, gzip(labels)));
  const Bytes cut = gzip(labels);
  write(dir + "/idx/gzip-no-trailer", idx_input(gzip(images), Bytes(cut.begin(), cut.end() - 8)));

  // API sequences: build the fuzz model, train, evaluate, predict, round-trip parameters, fit.
  const Bytes model = {0, 1, 4, 4, 1, 5, 4, 2, 1, 3};
  Bytes train = model;
  const Bytes trainer_args = {7, 0, 0, 0, 1, 0, 0, 7, 0, 130, 200, 0, 10, 0, 1, 2, 8, 0};
  train.insert(train.end(), trainer_args.begin(), trainer_args.end());
  Bytes step = {8, 4};
  for (int i = 0; i < 4 * 16 + 4; ++i) step.push_back(uint8_t(i * 37));
  step.push_back(1), step.push_back(1);
  train.insert(train.end(), step.begin(), step.end());
  train.insert(train.end(), step.begin(), step.end());
  write(dir + "/api/train", train);
  Bytes more = train;
  const Bytes tail = {9, 3, 1, 2, 3, 4, 5, 6, 10, 2, 11, 1, 0, 12, 13, 5, 3, 1, 14, 1, 9};
  more.insert(more.end(), tail.begin(), tail.end());
  write(dir + "/api/everything", more);
  // safetensors of the fuzz_safetensors model (with a BatchNorm): as dptrain writes it, cut short, with
  // F64 weights and no counters (as another writer may write it), and with a NaN.
  {
    dpt::ModelSpec bn(dpt::Shape{1, 4, 4});
    bn.add_dense(5);
    bn.add_batch_norm(bn.output_tensor());
    bn.add_activation(dpt::Activation::kTanh);
    bn.add_dense(3);
    dpt::Trainer weights(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), bn, dpt::TrainerConfig{});
    const std::string valid = dir + "/safetensors/valid.safetensors";
    dpt::save_safetensors(weights, valid);
    const Bytes image = dpt::file_io::read_file(valid, 1 << 20);
    write(dir + "/safetensors/truncated.safetensors", Bytes(image.begin(), image.begin() + 300));
    namespace st = dpt::safetensors;
    const st::Header h = st::decode(image.data(), image.size(), "seed");
    std::vector<Bytes> f64, nan;
    std::vector<st::TensorView> f64_views, nan_views;
    for (const st::Entry &e : h.tensors) {
      if (e.dtype != st::DType::kF32) continue;
      const unsigned char *p = image.data() + h.data_offset + e.begin;
      Bytes wide(size_t(e.bytes()) * 2);
      for (size_t i = 0; i < e.bytes() / 4; ++i) {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        const double d = v;
        std::memcpy(wide.data() + 8 * i, &d, 8);
      }
      f64.push_back(wide);
      nan.emplace_back(p, p + e.bytes());
      if (e.name == "1.running_var") {
        const float q = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(nan.back().data() + 4, &q, 4);
      }
    }
    size_t i = 0;
    for (const st::Entry &e : h.tensors) {
      if (e.dtype != st::DType::kF32) continue;
      f64_views.push_back({e.name, st::DType::kF64, e.shape, f64[i].data(), f64[i].size()});
      nan_views.push_back({e.name, st::DType::kF32, e.shape, nan[i].data(), nan[i].size()});
      ++i;
    }
    write(dir + "/safetensors/f64.safetensors", st::encode(f64_views, {{"format", "pt"}}));
    write(dir + "/safetensors/non-finite.safetensors", st::encode(nan_views, {}));
  }
  std::printf("seeds written under %s\n", dir.c_str());
  return 0;
}
