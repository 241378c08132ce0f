// Gradient checks of the transformer ops (issue 14): "linear" (dense over the last dimension),
// "causal_self_attention" and "position_embedding", each CPU kernel called through its dpt_op_call as the
// graph executor calls it (op_harness.hpp): forward against a naive double-precision reference, backward
// against central finite differences for every element of every input and parameter, the write/accumulate
// rules and n = 0.
//
// Tolerances: as test_gradients_norms.cpp (|analytic - fd| <= 1e-3 * max(1, |fd|), forward 1e-5).
// linear is linear in x and in its parameters: only fp32 rounding remains. Attention is smooth: the
// truncation error of the central difference is h^2/6 |L'''|, with scores of order 1 (inputs in [-1, 1],
// d = 2..4) |L'''| stays O(1), so ~2e-5 at h = 1e-2 (the worst seen is printed by every check).
// Sequence lengths 1 (one position: the output is its own value), 2, 5, 127 and 128 (the issue's).
#include "interface/op_math.hpp"
#include "op_harness.hpp"

namespace {

using namespace op_harness;

// y[r, o] = sum_i x[r, i] W[o, i] + b[o] for every row r of the last dimension, in double.
std::vector<double> linear_reference(const OpCase &k) {
  const dpt::Node &node = k.model.nodes().back();
  const size_t units = size_t(node.attrs.ints[0]), in = node.layout.params[0].shape[1];
  const bool bias = node.layout.params.size() > 1;
  const size_t rows = k.x[0].size() / in;
  std::vector<double> y(rows * units);
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < units; ++o) {
      double s = bias ? k.params[units * in + o] : 0.0;
      for (size_t i = 0; i < in; ++i) s += double(k.x[0][r * in + i]) * double(k.params[o * in + i]);
      y[r * units + o] = s;
    }
  return y;
}

void check_linear(const Shape &shape, size_t units, bool bias, uint64_t seed) {
  ModelSpec m(shape);
  m.add(dpt::op_def("linear"), {0}, ints({int64_t(units), bias ? 1 : 0}));
  const size_t in = shape[shape.rank() - 1];
  assert_true(m.output() == shape.with_last(units));
  assert_true(m.nodes()[0].layout.params[0].shape == (Shape{units, in}));
  assert_int_equal(m.nodes()[0].layout.params.size(), bias ? 2 : 1);
  OpCase c;
  c.name = "linear " + shape.text() + " -> " + std::to_string(units) + (bias ? "" : " no bias");
  c.model = m;
  c.n = 2;
  c.x = random_inputs(m, c.n, seed);
  TestRng rng(seed + 1);
  c.params = rng.vector(m.parameter_count(), -0.5f, 0.5f);
  c.reference = linear_reference;
  check_op(c);
}

void test_linear_rank2(void **) {
  check_linear(Shape{3, 5}, 4, true, 200);  // [sequence, features]
}
void test_linear_rank2_no_bias(void **) {
  check_linear(Shape{3, 5}, 4, false, 201);
}
void test_linear_rank3(void **) {
  check_linear(Shape{2, 3, 4}, 3, true, 202);
}
// Rank 1: the same as "dense" on a vector.
void test_linear_rank1(void **) {
  check_linear(Shape{6}, 5, true, 203);
}

void test_linear_refuses(void **) {
  ModelSpec m(Shape{3, 5});
  dpt_test::expect_error(
      [&] {
        m.add(dpt::op_def("linear"), {0}, ints({0, 1}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "linear with 0 units");
  dpt_test::expect_error(
      [&] {
        m.add(dpt::op_def("linear"), {0}, ints({4, 2}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "linear with bias 2");
}

// For every sample and head: s_ij = q_i . k_j / sqrt(d) for j <= i, p = softmax over j <= i, o_i =
// sum_j p_ij m_ij v_j; in double. m: the attention dropout mask (op_call.h's key: the harness's seed 42, step
// 0, the node's index, the sample), 1 without dropout.
std::vector<double> attention_reference(const OpCase &k) {
  const Shape &in = k.model.input();
  const dpt::Node &node = k.model.nodes().back();
  const size_t t = in[0], c = in[1] / 3, heads = size_t(node.attrs.ints[0]), d = c / heads;
  const float rate = float(node.attrs.reals[0]), keep = 1.0f / (1.0f - rate);
  const uint64_t key = dpt::op_math::dropout_key(42, 0, k.model.nodes().size() - 1);
  std::vector<double> y(k.n * t * c);
  for (size_t s = 0; s < k.n; ++s) {
    const float *qkv = &k.x[0][s * t * 3 * c];
    for (size_t h = 0; h < heads; ++h)
      for (size_t i = 0; i < t; ++i) {
        std::vector<double> score(i + 1);
        double max = -1e300;
        for (size_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (size_t e = 0; e < d; ++e)
            dot += double(qkv[i * 3 * c + h * d + e]) * qkv[j * 3 * c + c + h * d + e];
          score[j] = dot / std::sqrt(double(d));
          max = std::max(max, score[j]);
        }
        double total = 0.0;
        for (double &v : score) total += (v = std::exp(v - max));
        for (size_t e = 0; e < d; ++e) {
          double o = 0.0;
          for (size_t j = 0; j <= i; ++j) {
            const double m = rate > 0.0f
                                 ? dpt::op_math::dropout_factor(dpt::op_math::dropout_sample_key(key, s),
                                                                (h * t + i) * t + j, rate, keep)
                                 : 1.0;
            o += score[j] / total * m * qkv[j * 3 * c + 2 * c + h * d + e];
          }
          y[(s * t + i) * c + h * d + e] = o;
        }
      }
  }
  return y;
}

void check_attention(size_t t, size_t c, size_t heads, size_t n, uint64_t seed, double dropout = 0.0) {
  ModelSpec m(Shape{t, 3 * c});
  dpt::OpAttrs a = ints({int64_t(heads)});
  a.reals[0] = dropout;
  m.add(dpt::op_def("causal_self_attention"), {0}, a);
  assert_true(m.output() == (Shape{t, c}));
  assert_int_equal(m.parameter_count(), 0);
  // Linear in T: a maximum and a sum per head and position, not the T x T probabilities.
  assert_int_equal(m.nodes()[0].layout.saved_bytes_per_sample, 2 * heads * t * sizeof(float));
  OpCase c_;
  c_.name = "causal_self_attention T=" + std::to_string(t) + " C=" + std::to_string(c) +
            " heads=" + std::to_string(heads) + " n=" + std::to_string(n) +
            (dropout > 0 ? " dropout " + std::to_string(dropout).substr(0, 4) : "");
  c_.model = m;
  c_.n = n;
  c_.x = random_inputs(m, n, seed);
  c_.reference = attention_reference;
  check_op(c_);
}

void test_attention_one_position(void **) {
  check_attention(1, 4, 2, 2, 210);
}
void test_attention_two_positions(void **) {
  check_attention(2, 4, 1, 2, 211);
}
void test_attention_five_positions_four_heads(void **) {
  check_attention(5, 8, 4, 3, 212);
}
void test_attention_127(void **) {
  check_attention(127, 4, 2, 1, 213);
}
void test_attention_128(void **) {
  check_attention(128, 4, 2, 2, 214);
}
// Attention dropout: the same checks with the mask of each probability (forward against the reference's
// mask, backward through it by finite differences); about 30% of them dropped.
void test_attention_dropout(void **) {
  check_attention(5, 8, 4, 3, 216, 0.3);
  check_attention(33, 4, 2, 2, 217, 0.3);
}

// A later position never reaches an earlier output: changing the keys and values of the last position
// leaves every other position's output bitwise as it was.
void test_attention_is_causal(void **) {
  const size_t t = 6, c = 4;
  ModelSpec m(Shape{t, 3 * c});
  m.add(dpt::op_def("causal_self_attention"), {0}, ints({2}));
  NodeHarness hx(m, 0, 1, true, true, 7);
  Inputs x = random_inputs(m, 1, 215);
  std::vector<float> none, buffers;
  const std::vector<float> before = hx.forward(none, buffers, x);
  for (size_t e = c; e < 3 * c; ++e) x[0][(t - 1) * 3 * c + e] += 0.5f;
  const std::vector<float> after = hx.forward(none, buffers, x);
  assert_memory_equal(before.data(), after.data(), (t - 1) * c * sizeof(float));
  bool last_changed = false;
  for (size_t e = 0; e < c; ++e)
    last_changed = last_changed || before[(t - 1) * c + e] != after[(t - 1) * c + e];
  assert_true(last_changed);
}

void test_attention_refuses(void **) {
  auto refused = [](const Shape &shape, int64_t heads, const char *what) {
    ModelSpec m(shape);
    dpt_test::expect_error([&] { m.add(dpt::op_def("causal_self_attention"), {0}, ints({heads})); },
                           DPT_ERROR_INVALID_ARGUMENT, what);
  };
  refused(Shape{4, 10}, 1, "3C not a multiple of 3");
  refused(Shape{12}, 1, "rank 1");
  refused(Shape{4, 12}, 3, "3 heads for 4 features");
  refused(Shape{4, 12}, 0, "0 heads");
  refused(Shape{8193, 3}, 1, "a sequence longer than 8192");
  ModelSpec m(Shape{4, 12});
  dpt::OpAttrs a = ints({2});
  a.reals[0] = 1.0;
  dpt_test::expect_error([&] { m.add(dpt::op_def("causal_self_attention"), {0}, a); }, DPT_ERROR_OUT_OF_RANGE,
                         "dropout 1");
}

// y[t] = x[t] + W[t] for every sample; dW sums dy over the samples.
void test_position_embedding(void **) {
  ModelSpec m(Shape{5, 3});
  m.add(dpt::op_def("position_embedding"), {0}, {}, "wpe");
  assert_true(m.output() == (Shape{5, 3}));
  const std::vector<dpt::NamedTensor> names = dpt::named_parameters(m);
  assert_int_equal(names.size(), 1);
  assert_string_equal(names[0].name.c_str(), "wpe.weight");  // nanoGPT's name
  assert_true(names[0].shape == (Shape{5, 3}));
  OpCase c;
  c.name = "position_embedding [5, 3]";
  c.model = m;
  c.n = 3;
  c.x = random_inputs(m, c.n, 220);
  TestRng rng(221);
  c.params = rng.vector(15, -0.5f, 0.5f);
  c.reference = [](const OpCase &k) {
    std::vector<double> y(k.x[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = double(k.x[0][i]) + k.params[i % 15];
    return y;
  };
  check_op(c);
  ModelSpec flat(Shape{15});
  dpt_test::expect_error([&] { flat.add(dpt::op_def("position_embedding"), {0}, {}); },
                         DPT_ERROR_INVALID_ARGUMENT, "a rank-1 input");
}

}  // namespace

int main() {
  dpt::blas::use_single_thread();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_rank2),
      cmocka_unit_test(test_linear_rank2_no_bias),
      cmocka_unit_test(test_linear_rank3),
      cmocka_unit_test(test_linear_rank1),
      cmocka_unit_test(test_linear_refuses),
      cmocka_unit_test(test_attention_one_position),
      cmocka_unit_test(test_attention_two_positions),
      cmocka_unit_test(test_attention_five_positions_four_heads),
      cmocka_unit_test(test_attention_127),
      cmocka_unit_test(test_attention_128),
      cmocka_unit_test(test_attention_dropout),
      cmocka_unit_test(test_attention_is_causal),
      cmocka_unit_test(test_attention_refuses),
      cmocka_unit_test(test_position_embedding),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
