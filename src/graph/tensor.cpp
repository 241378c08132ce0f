#include "graph/tensor.hpp"

#include "core/error.hpp"

namespace dpt {

Shape::Shape(std::initializer_list<size_t> dims) {
  DPT_REQUIRE(dims.size() <= kMaxRank, DPT_ERROR_INTERNAL, "a tensor has at most 4 dimensions");
  for (size_t d : dims) dims_[rank_++] = d;
}

size_t Shape::size() const {
  size_t n = 1;
  for (uint32_t i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::with_last(size_t d) const {
  DPT_REQUIRE(rank_ > 0, DPT_ERROR_INTERNAL, "a scalar has no last dimension");
  Shape s = *this;
  s.dims_[rank_ - 1] = d;
  return s;
}

std::string Shape::text() const {
  std::string s;
  for (uint32_t i = 0; i < rank_; ++i) {
    if (i != 0) s += 'x';
    s += std::to_string(dims_[i]);
  }
  return s;
}

}  // namespace dpt
