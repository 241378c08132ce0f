// Reader of IDX files (the MNIST family's format), gzip-compressed or plain.
//
// A gzip file must be complete: it is inflated with zlib's inflate() directly, and its data end only
// where a member's end-of-stream was reached and its CRC-32 / length trailer verified (zlib's gzread
// returned the data of a stream whose trailer was cut off without an error). Concatenated members are
// read as the concatenation of their data, as RFC 1952 and gzip -d do; anything after the last member
// that is not a complete member is refused. Files are opened through file_io::InputFile, which refuses
// FIFOs, directories and devices before a read could block.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/platform.hpp"
#include "data/dataset.hpp"

namespace dpt {

namespace {

constexpr uint32_t kImageMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr uint32_t kMaxSamples = 1u << 28;
constexpr uint32_t kMaxSide = 1u << 14;

// The bytes of an IDX file: the file itself, or the data of its gzip members.
class IdxStream {
 public:
  explicit IdxStream(const std::string &path) : path_(path), file_(path), input_(kInputChunk) {
    refill();
    gzip_ = available_ >= 2 && input_[0] == 0x1f && input_[1] == 0x8b;  // IDX magics start with 0x00
    if (gzip_) {
      stream_.next_in = input_.data();
      stream_.avail_in = uInt(available_);
      const int rc = inflateInit2(&stream_, 15 + 16);  // 15 + 16: a gzip wrapper, not zlib's
      if (rc == Z_MEM_ERROR) throw_error(DPT_ERROR_OUT_OF_MEMORY, "out of memory inflating '" + path + "'");
      DPT_REQUIRE(rc == Z_OK, DPT_ERROR_INTERNAL, "inflateInit2 failed for '" + path + "'");
      inflating_ = true;
    }
  }
  ~IdxStream() {
    if (inflating_) inflateEnd(&stream_);
  }
  IdxStream(const IdxStream &) = delete;
  IdxStream &operator=(const IdxStream &) = delete;

  // Up to n bytes of data; fewer only at the end of the data, 0 there.
  size_t read(unsigned char *destination, size_t n) {
    return gzip_ ? inflate_into(destination, n) : copy_into(destination, n);
  }

  const std::string &path() const { return path_; }

 private:
  static constexpr size_t kInputChunk = size_t(256) << 10;

  // Fills the input buffer from the file; false at its end.
  bool refill() {
    available_ = file_.read(input_.data(), input_.size());
    offset_ = 0;
    return available_ != 0;
  }

  size_t copy_into(unsigned char *destination, size_t n) {
    size_t done = 0;
    while (done < n) {
      if (offset_ == available_ && !refill()) break;
      const size_t take = std::min(n - done, available_ - offset_);
      std::memcpy(destination + done, input_.data() + offset_, take);
      offset_ += take;
      done += take;
    }
    return done;
  }

  size_t inflate_into(unsigned char *destination, size_t n) {
    size_t done = 0;
    while (done < n) {
      if (stream_.avail_in == 0) {
        if (!refill()) {
          // The file ends: cleanly only between members, after a verified trailer.
          DPT_REQUIRE(between_members_, DPT_ERROR_FORMAT,
                      "'" + path_ + "' is truncated: gzip member " + std::to_string(members_ + 1) +
                          " is incomplete (its data or its CRC-32/length trailer is cut off)");
          break;
        }
        stream_.next_in = input_.data();
        stream_.avail_in = uInt(available_);
      }
      if (between_members_) {  // more bytes after a complete member: they must be another member
        DPT_REQUIRE(inflateReset(&stream_) == Z_OK, DPT_ERROR_INTERNAL, "inflateReset failed");
        between_members_ = false;
      }
      const size_t want = std::min<size_t>(n - done, 1u << 30);
      stream_.next_out = destination + done;
      stream_.avail_out = uInt(want);
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      done += want - stream_.avail_out;
      if (rc == Z_STREAM_END) {  // zlib has checked this member's CRC-32 and length
        between_members_ = true;
        ++members_;
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && stream_.avail_in == 0)) {
        fail(rc);
      }
    }
    return done;
  }

  [[noreturn]] void fail(int rc) {
    if (rc == Z_MEM_ERROR) throw_error(DPT_ERROR_OUT_OF_MEMORY, "out of memory inflating '" + path_ + "'");
    const std::string message = stream_.msg != nullptr ? stream_.msg : "error " + std::to_string(rc);
    if (members_ > 0 && message == "incorrect header check")  // where another member should begin
      throw_error(DPT_ERROR_FORMAT, "'" + path_ + "' has bytes after its gzip stream (" +
                                        std::to_string(members_) + (members_ == 1 ? " member" : " members") +
                                        ") that are not a gzip member");
    if (message == "incorrect data check")
      throw_error(DPT_ERROR_FORMAT, "'" + path_ + "' is corrupt: the CRC-32 of gzip member " +
                                        std::to_string(members_ + 1) + " does not match its data");
    if (message == "incorrect length check")
      throw_error(DPT_ERROR_FORMAT, "'" + path_ + "' is corrupt: the length in the trailer of gzip member " +
                                        std::to_string(members_ + 1) + " does not match its data");
    throw_error(DPT_ERROR_FORMAT, "'" + path_ + "' is not a valid gzip stream (member " +
                                      std::to_string(members_ + 1) + "): " + message);
  }

  std::string path_;
  file_io::InputFile file_;
  std::vector<unsigned char> input_;
  size_t available_ = 0, offset_ = 0;  // bytes in input_, and (plain files) how many were used
  bool gzip_ = false, inflating_ = false;
  z_stream stream_{};
  bool between_members_ = false;  // the last member ended (and was verified); no other began yet
  uint64_t members_ = 0;          // complete members so far
};

class IdxFile {
 public:
  explicit IdxFile(const std::string &path) : stream_(path) {}

  uint32_t read_u32(const char *what) {
    unsigned char b[4];
    read_exact(b, 4, what);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  }

  // Reads exactly n payload bytes, growing the buffer as data arrives: a header that claims more data
  // than the file holds fails at the end of the file instead of allocating what it claims. Then the data
  // must end (for gzip: with a verified trailer).
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
    DPT_REQUIRE(stream_.read(&extra, 1) == 0, DPT_ERROR_FORMAT,
                "'" + path() + "' has trailing bytes after " + std::to_string(n) + " bytes of data");
    return data;
  }

  const std::string &path() const { return stream_.path(); }

 private:
  void read_exact(unsigned char *dst, size_t n, const char *what) {
    size_t done = 0;
    while (done < n) {
      const size_t got = stream_.read(dst + done, n - done);
      DPT_REQUIRE(got > 0, DPT_ERROR_FORMAT, "'" + path() + "' is truncated (reading " + what + ")");
      done += got;
    }
  }

  IdxStream stream_;
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
