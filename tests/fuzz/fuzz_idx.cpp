// Fuzz target: the IDX (gzip or plain) loader. The input is split into an image file and a label file:
// the first byte (mod size) says where. Both go through real files (memfd), as a user's would.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "mem_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const size_t split = 1 + (data[0] * (size - 1)) / 255;
  MemFile images(data + 1, split - 1), labels(data + split, size - split);
  if (images.fd < 0 || labels.fd < 0) return 0;
  try {
    dpt::Dataset d = dpt::load_idx(images.path(), labels.path());
    // Accepted: the dataset must be internally consistent.
    if (d.size() == 0 || d.shape().size() == 0 || d.classes() == 0) __builtin_trap();
    for (size_t i = 0; i < d.size(); ++i)
      if (d.labels()[i] < 0 || size_t(d.labels()[i]) >= d.classes()) __builtin_trap();
  } catch (const dpt::Error &) {
  }
  return 0;
}
