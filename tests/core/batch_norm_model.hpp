// The model of the batch-norm tests (test_batch_norm, test_recompute_statistics): on 2x6x6 inputs, a residual
// block with batch norm, then a 1-D batch norm after a dense layer; with input_norm, a batch norm on the
// input itself first (its statistics are the data's). From width 16 the block's second convolution runs as
// Winograd F(2x2, 3x3) on the CPU (conv2d_winograd.cpp).
#pragma once

#include <cstddef>

#include "graph/model_spec.hpp"

namespace dpt_test {

inline dpt::ModelSpec batch_norm_model(size_t width, size_t classes, bool input_norm = false) {
  dpt::ModelSpec m(dpt::Shape{2, 6, 6});
  if (input_norm) m.add_batch_norm(m.output_tensor(), 1e-5, 0.1, "bn0");
  const size_t a = m.add_conv2d(width, 3, 1, 1, false);
  const size_t b = m.add_op("relu", {m.add_batch_norm(a, 1e-5, 0.1, "bn1")}, "relu1");
  m.add_conv2d(width, 3, 1, 1, false);
  const size_t c = m.add_batch_norm(m.output_tensor(), 1e-5, 0.3, "bn2");
  m.add_op("relu", {m.add_op("add", {c, b}, "add")}, "relu2");
  m.add_op("global_avg_pool", {m.output_tensor()}, "gap");
  m.add_dense(8);
  m.add_batch_norm(m.output_tensor(), 1e-3, 0.1, "bn3");
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(classes);
  return m;
}

}  // namespace dpt_test
