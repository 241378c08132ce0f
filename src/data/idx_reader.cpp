// Reader of IDX files (the MNIST family's format), gzip-compressed or plain (zlib reads both).
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "data/dataset.hpp"

namespace dpt {

namespace {

constexpr uint32_t kImageMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr uint32_t kMaxSamples = 1u << 28;
constexpr uint32_t kMaxSide = 1u << 14;

struct GzCloser {
  void operator()(gzFile_s *f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

class IdxFile {
 public:
  explicit IdxFile(const std::string &path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    DPT_REQUIRE(file_ != nullptr, DPT_ERROR_IO, "cannot open '" + path + "': " + std::strerror(errno));
  }

  uint32_t read_u32(const char *what) {
    unsigned char b[4];
    read_exact(b, 4, what);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  }

  // Reads exactly n payload bytes, growing the buffer as data arrives: a header that claims more data
  // than the file holds fails at the end of the file instead of allocating what it claims.
  std::vector<unsigned char> read_payload(uint64_t n) {
    std::vector<unsigned char> data;
    constexpr uint64_t kChunk = 16u << 20;
    while (data.size() < n) {
      size_t want = size_t(std::min<uint64_t>(kChunk, n - data.size()));
      size_t old = data.size();
      data.resize(old + want);
      read_exact(data.data() + old, want, "data");
    }
    unsigned char extra;
    int got = gzread(file_.get(), &extra, 1);
    check_stream();
    DPT_REQUIRE(got == 0, DPT_ERROR_FORMAT,
                "'" + path_ + "' has trailing bytes after " + std::to_string(n) + " bytes of data");
    return data;
  }

  const std::string &path() const { return path_; }

 private:
  void read_exact(unsigned char *dst, size_t n, const char *what) {
    size_t done = 0;
    while (done < n) {
      unsigned chunk = unsigned(std::min<size_t>(n - done, 1u << 30));
      int got = gzread(file_.get(), dst + done, chunk);
      check_stream();
      DPT_REQUIRE(got > 0, DPT_ERROR_FORMAT, "'" + path_ + "' is truncated (reading " + what + ")");
      done += size_t(got);
    }
  }

  void check_stream() {
    int code = Z_OK;
    const char *message = gzerror(file_.get(), &code);
    if (code == Z_ERRNO) throw_error(DPT_ERROR_IO, "cannot read '" + path_ + "': " + std::strerror(errno));
    // Z_BUF_ERROR: the gzip stream ends early (a missing CRC/length trailer included).
    if (code == Z_BUF_ERROR)
      throw_error(DPT_ERROR_FORMAT, "'" + path_ + "' is truncated (gzip stream ends early)");
    if (code != Z_OK && code != Z_STREAM_END)
      throw_error(DPT_ERROR_FORMAT, "'" + path_ + "' is not a valid gzip stream: " + message);
  }

  std::string path_;
  GzFile file_;
};

void check_magic(IdxFile &f, uint32_t expected, const char *kind) {
  uint32_t magic = f.read_u32("magic");
  if (magic != expected) {
    char text[96];
    std::snprintf(text, sizeof text, "bad magic 0x%08x, expected 0x%08x (%s)", magic, expected, kind);
    throw_error(DPT_ERROR_FORMAT, "'" + f.path() + "': " + text);
  }
}

uint32_t read_dimension(IdxFile &f, const char *what, uint32_t max) {
  uint32_t v = f.read_u32(what);
  DPT_REQUIRE(v > 0 && v <= max, DPT_ERROR_FORMAT,
              "'" + f.path() + "': implausible " + what + " " + std::to_string(v));
  return v;
}

}  // namespace

Dataset load_idx(const std::string &images_path, const std::string &labels_path) {
  IdxFile images(images_path);
  check_magic(images, kImageMagic, "IDX images: u8, 3 dimensions");
  const uint32_t count = read_dimension(images, "image count", kMaxSamples);
  const uint32_t rows = read_dimension(images, "row count", kMaxSide);
  const uint32_t cols = read_dimension(images, "column count", kMaxSide);

  IdxFile labels(labels_path);
  check_magic(labels, kLabelMagic, "IDX labels: u8, 1 dimension");
  const uint32_t label_count = read_dimension(labels, "label count", kMaxSamples);
  DPT_REQUIRE(label_count == count, DPT_ERROR_FORMAT,
              "'" + labels_path + "' has " + std::to_string(label_count) + " labels for " +
                  std::to_string(count) + " images");

  const uint64_t pixels_per_image = uint64_t(rows) * cols;
  DPT_REQUIRE(pixels_per_image <= (1u << 28), DPT_ERROR_FORMAT, "'" + images_path + "': images too large");
  const std::vector<unsigned char> pixels = images.read_payload(uint64_t(count) * pixels_per_image);
  const std::vector<unsigned char> raw_labels = labels.read_payload(count);

  std::vector<float> x(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) x[i] = float(pixels[i]) / 255.0f;
  std::vector<int32_t> y(raw_labels.begin(), raw_labels.end());
  const size_t classes = size_t(*std::max_element(y.begin(), y.end())) + 1;
  return Dataset(Shape{1, rows, cols}, classes, std::move(x), std::move(y));
}

Dataset load_fashion_mnist(const std::string &directory, bool train) {
  std::string dir = directory;
  if (dir.empty()) dir = platform::env("DPTRAIN_DATA_DIR").value_or("/usr/share/datasets/fashion-mnist");
  const std::string prefix = dir + (train ? "/train" : "/t10k");
  Dataset d = load_idx(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz");
  DPT_REQUIRE(d.shape() == (Shape{1, 28, 28}), DPT_ERROR_FORMAT,
              "Fashion-MNIST images under '" + dir + "' are not 28x28");
  DPT_REQUIRE(d.classes() <= 10, DPT_ERROR_FORMAT, "Fashion-MNIST labels under '" + dir + "' exceed 9");
  d.widen_classes(10);  // a subset of the files may lack the last classes
  return d;
}

}  // namespace dpt
