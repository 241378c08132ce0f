// What a model's tensors are: an element type and the shape of one sample (the batch dimension is implicit:
// a tensor of n samples holds n * shape.size() elements, row-major, images CHW).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "interface/op_call.h"

namespace dpt {

// Activations and parameters are kF32 in this version (the 16-bit types are carried so that 16-bit
// precision is an addition); kI32 is a model's input of tokens.
enum class DType : int32_t {
  kF32 = DPT_DTYPE_F32,
  kBF16 = DPT_DTYPE_BF16,
  kF16 = DPT_DTYPE_F16,
  kI32 = DPT_DTYPE_I32
};

constexpr size_t kMaxRank = DPT_OP_MAX_RANK;

class Shape {
 public:
  Shape() = default;
  // Shape{c, h, w}, Shape{features}: at most kMaxRank dimensions (more is an internal error).
  Shape(std::initializer_list<size_t> dims);

  size_t rank() const { return rank_; }
  size_t operator[](size_t i) const { return dims_[i]; }
  // Elements of one sample (1 for rank 0).
  size_t size() const;
  // The same shape with its last dimension d (rank >= 1).
  Shape with_last(size_t d) const;
  bool operator==(const Shape &) const = default;
  // "1x28x28"
  std::string text() const;

 private:
  uint32_t rank_ = 0;
  std::array<size_t, kMaxRank> dims_{};
};

struct TensorInfo {
  Shape shape;
  DType dtype = DType::kF32;
};

// The plain-C description of a tensor of this shape for a dpt_op_call (data pointer not set).
inline dpt_tensor op_tensor(const Shape &shape, DType dtype = DType::kF32) {
  dpt_tensor t{};
  t.dtype = int32_t(dtype);
  t.rank = int32_t(shape.rank());
  for (size_t i = 0; i < shape.rank(); ++i) t.dims[i] = int64_t(shape[i]);
  return t;
}

}  // namespace dpt
