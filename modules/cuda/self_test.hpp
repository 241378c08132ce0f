// The self-test of one GPU (the test extension dpt_backend_test_v1: self_test).
#pragma once

#include <cstddef>

namespace dpt::cuda {

// Runs a kernel of this module (proving that its cubin or PTX suits the GPU), a cuBLAS SGEMM, a cuDNN
// softmax and a one-rank NCCL all-reduce on device ordinal, and compares each with the host result.
int self_test(int ordinal, char *error, size_t error_size);

}  // namespace dpt::cuda
