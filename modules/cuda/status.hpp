// Error reports of the CUDA module's phase-2 calls: one line naming the device and the failed call, written
// into the caller's buffer, and the DPT_BACKEND_ERROR_* code that matches the library status.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstddef>

#include "interface/backend_interface.h"

namespace dpt::cuda {

// The caller's error buffer.
struct Error {
  char *text;
  size_t size;
};

// Writes printf-style text (one line) and returns code.
int report(const Error &e, int code, const char *format, ...) __attribute__((format(printf, 3, 4)));

// "cuda:0: call: error 2, cudaErrorMemoryAllocation: out of memory"; clears the (non-sticky) error so that
// the next call of the thread does not see it.
int cuda_failed(const Error &e, int ordinal, const char *call, cudaError_t status);
// "cuda:0: cublasSgemm: CUBLAS_STATUS_INVALID_VALUE"
int cublas_failed(const Error &e, int ordinal, const char *call, cublasStatus_t status);
// "cuda:0: cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM"
int cudnn_failed(const Error &e, int ordinal, const char *call, cudnnStatus_t status);
// "cuda:0,1: ncclCommInitAll: unhandled cuda error (...): <NCCL's last error>"; ranks names the devices.
int nccl_failed(const Error &e, const char *ranks, const char *call, ncclResult_t status, ncclComm_t comm);

}  // namespace dpt::cuda

// Each returns from the enclosing function with the report when the call fails; e and ordinal in scope.
#define DPT_CUDA(call, expr)                                                              \
  do {                                                                                    \
    const cudaError_t dpt_s_ = (expr);                                                    \
    if (dpt_s_ != cudaSuccess) return ::dpt::cuda::cuda_failed(e, ordinal, call, dpt_s_); \
  } while (0)
#define DPT_CUBLAS(call, expr)                                                                        \
  do {                                                                                                \
    const cublasStatus_t dpt_s_ = (expr);                                                             \
    if (dpt_s_ != CUBLAS_STATUS_SUCCESS) return ::dpt::cuda::cublas_failed(e, ordinal, call, dpt_s_); \
  } while (0)
#define DPT_CUDNN(call, expr)                                                                       \
  do {                                                                                              \
    const cudnnStatus_t dpt_s_ = (expr);                                                            \
    if (dpt_s_ != CUDNN_STATUS_SUCCESS) return ::dpt::cuda::cudnn_failed(e, ordinal, call, dpt_s_); \
  } while (0)
