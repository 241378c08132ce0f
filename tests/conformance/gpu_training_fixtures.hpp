// What the GPU training conformance tests share (test_gpu_training.cpp, test_gpu_sharding.cpp,
// test_gpu_overlap.cpp, one binary):
// the tolerances, synthetic batches, contexts and trainers of the tests' recipe, and the models they train.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/context.hpp"
#include "graph/model_spec.hpp"
#include "parallel/trainer.hpp"

namespace gpu_test {

// The numerics contract of the equivalence tests (TF32 off): relative_error.h's metric.
constexpr double kEquivalence = 1e-5;
// One GPU replica against one CPU device: different summation orders in every GEMM and convolution.
constexpr double kAcrossBackends = 1e-4;

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
  size_t n = 0;
};

// n images of 28 x 28 in [0, 1) and labels below 10, from the seed.
Batch batch(size_t n, uint64_t seed);
// A context with the CUDA devices (the test skips without a module or a GPU), and one with CPU devices.
std::shared_ptr<dpt::Context> gpu_context();
std::shared_ptr<dpt::Context> cpu_context();
// The simulated module (tests/sim_cuda) is the one loaded.
bool simulated();
// Skips the test unless the context has count GPUs.
void need_gpus(const dpt::Context &context, size_t count);
// The tests' recipe on the given devices (deterministic convolution algorithms: see the definition).
dpt::TrainerConfig config(std::vector<size_t> devices, dpt::OptimizerKind kind = dpt::OptimizerKind::kSgd);
// A LeNet-like convolutional model's trainer of configuration c.
std::unique_ptr<dpt::Trainer> trainer(std::shared_ptr<dpt::Context> context, dpt::TrainerConfig c);
// Replica `replica`'s parameters.
std::vector<float> parameters(const dpt::Trainer &t, size_t replica = 0);
// Four steps, the last on a batch that does not divide evenly.
void train(dpt::Trainer &t);
// Fails the test unless got is within tolerance of want (relative to how far training moved from start).
void expect_equivalent(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                       const std::vector<float> &start, double tolerance);
// A residual model with two batch-norm layers on 1 x 28 x 28.
dpt::ModelSpec batch_norm_model();
// A small GPT: token and position embeddings, a pre-LayerNorm block with causal attention, the LM head.
dpt::ModelSpec token_model();
// A language model whose head (a linear layer after "mid") is tied to its token embedding (17 tokens, width
// 16, 12 positions): token_model's batches fit it.
dpt::ModelSpec tied_head_model();
// Four steps of token_model's batches (a target at every position, one in seven ignored).
void train_tokens(dpt::Trainer &t);
// The timeline t recorded since start_trace (which this ends): written to a file of this process's (name
// tells the callers' apart), read back, removed.
std::string trace_of(dpt::Trainer &t, const char *name);
// Occurrences of text in content.
size_t occurrences(const std::string &content, const char *text);

// test_gpu_sharding.cpp
void test_gpu_sharded_optimizer(void **);
void test_gpu_sharded_gradients(void **);
void test_gpu_sharded_parameters(void **);
void test_gpu_sharded_parameters_read_ahead(void **);
void test_gpu_sharded_tied_head(void **);
// test_gpu_overlap.cpp
void test_gpu_overlapped_buckets_match_one_call(void **);
void test_gpu_overlapped_hang_times_out(void **);
void test_gpu_overlapped_backward_failure(void **);
void test_gpu_pipeline_stage_buckets(void **);
void test_gpu_overlapped_buckets_wire16(void **);

}  // namespace gpu_test
