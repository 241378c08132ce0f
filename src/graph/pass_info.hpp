// What a forward/backward pass needs to know besides the tensors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dpt {

struct PassInfo {
  size_t n = 0;               // samples in this slice
  uint64_t first_sample = 0;  // position of the slice's first sample in the accumulation window
  uint64_t seed = 0;
  uint64_t step = 0;  // optimizer step being computed; keys the dropout masks
  size_t layer_index = 0;  // unused by the executor (each op's call carries its node index)
  bool training = false;
  // Set when the pass should stop (a deadline passed or a peer device failed): checked between ops, so
  // an aborted device returns within one op's time.
  const std::atomic<bool> *cancel = nullptr;
};

}  // namespace dpt
