#include "cuda/self_test.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <cmath>

#include "cuda/errors.hpp"

namespace dpt::cuda {

namespace {

constexpr int kCount = 256;  // floats per buffer

__global__ void fill_kernel(float *x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.5f * float(i) - 3.0f;
}

float filled(int i) {
  return 0.5f * float(i) - 3.0f;
}

bool close_to(float got, float want) {
  return std::fabs(got - want) <= 1e-5f * (1.0f + std::fabs(want));
}

// Everything one self-test holds, released whatever step failed.
struct Resources {
  cudaStream_t stream = nullptr;
  float *a = nullptr, *b = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  cudnnTensorDescriptor_t tensor = nullptr;
  ncclComm_t comm = nullptr;

  ~Resources() {
    if (stream != nullptr) cudaStreamSynchronize(stream);
    if (comm != nullptr) ncclCommDestroy(comm);
    if (tensor != nullptr) cudnnDestroyTensorDescriptor(tensor);
    if (dnn != nullptr) cudnnDestroy(dnn);
    if (blas != nullptr) cublasDestroy(blas);
    if (a != nullptr) cudaFree(a);
    if (b != nullptr) cudaFree(b);
    if (stream != nullptr) cudaStreamDestroy(stream);
    cudaGetLastError();
  }
};

}  // namespace

// Each check returns from self_test with a message naming the device, the call and the error.
#define DPT_CHECK_CUDA(what, call)                                          \
  do {                                                                      \
    const cudaError_t s_ = (call);                                          \
    if (s_ != cudaSuccess) {                                                \
      char w_[256];                                                         \
      describe(s_, w_, sizeof w_);                                          \
      cudaGetLastError();                                                   \
      return fail(error, error_size, "cuda:%d: %s: %s", ordinal, what, w_); \
    }                                                                       \
  } while (0)
#define DPT_CHECK_CUBLAS(what, call)                                                               \
  do {                                                                                             \
    const cublasStatus_t s_ = (call);                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                               \
      return fail(error, error_size, "cuda:%d: %s: %s", ordinal, what, cublasGetStatusString(s_)); \
  } while (0)
#define DPT_CHECK_CUDNN(what, call)                                                              \
  do {                                                                                           \
    const cudnnStatus_t s_ = (call);                                                             \
    if (s_ != CUDNN_STATUS_SUCCESS)                                                              \
      return fail(error, error_size, "cuda:%d: %s: %s", ordinal, what, cudnnGetErrorString(s_)); \
  } while (0)
#define DPT_CHECK_NCCL(what, call)                                                              \
  do {                                                                                          \
    const ncclResult_t s_ = (call);                                                             \
    if (s_ != ncclSuccess)                                                                      \
      return fail(error, error_size, "cuda:%d: %s: %s", ordinal, what, ncclGetErrorString(s_)); \
  } while (0)

int self_test(int ordinal, char *error, size_t error_size) {
  DeviceGuard guard(ordinal);
  DPT_CHECK_CUDA("cudaSetDevice", guard.status());
  Resources r;
  float host[kCount];
  DPT_CHECK_CUDA("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  DPT_CHECK_CUDA("cudaMalloc", cudaMalloc(&r.a, kCount * sizeof(float)));
  DPT_CHECK_CUDA("cudaMalloc", cudaMalloc(&r.b, kCount * sizeof(float)));

  // 1. A kernel of this module: fails with "no kernel image" when neither its cubins nor its PTX suit the
  // GPU.
  fill_kernel<<<(kCount + 127) / 128, 128, 0, r.stream>>>(r.a, kCount);
  DPT_CHECK_CUDA("fill kernel launch", cudaGetLastError());
  DPT_CHECK_CUDA("cudaMemcpyAsync",
                 cudaMemcpyAsync(host, r.a, sizeof host, cudaMemcpyDeviceToHost, r.stream));
  DPT_CHECK_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(r.stream));
  for (int i = 0; i < kCount; ++i)
    if (host[i] != filled(i))
      return fail(error, error_size, "cuda:%d: fill kernel: x[%d] = %g, expected %g", ordinal, i, host[i],
                  filled(i));

  // 2. cuBLAS: C (2x2) = A (2x3) * B (3x2), column-major, A = a[0..5], B = a[6..11], C in b[0..3].
  DPT_CHECK_CUBLAS("cublasCreate", cublasCreate(&r.blas));
  DPT_CHECK_CUBLAS("cublasSetStream", cublasSetStream(r.blas, r.stream));
  const float one = 1.0f, zero = 0.0f;
  DPT_CHECK_CUBLAS("cublasSgemm", cublasSgemm(r.blas, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, r.a, 2,
                                              r.a + 6, 3, &zero, r.b, 2));
  DPT_CHECK_CUDA("cudaMemcpyAsync",
                 cudaMemcpyAsync(host, r.b, 4 * sizeof(float), cudaMemcpyDeviceToHost, r.stream));
  DPT_CHECK_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(r.stream));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float want = 0;
      for (int l = 0; l < 3; ++l) want += filled(i + 2 * l) * filled(6 + l + 3 * j);
      if (!close_to(host[i + 2 * j], want))
        return fail(error, error_size, "cuda:%d: cublasSgemm: C[%d,%d] = %g, expected %g", ordinal, i, j,
                    host[i + 2 * j], want);
    }
  }

  // 3. cuDNN: softmax over 4 channels of a[0..3] into b[0..3].
  DPT_CHECK_CUDNN("cudnnCreate", cudnnCreate(&r.dnn));
  DPT_CHECK_CUDNN("cudnnSetStream", cudnnSetStream(r.dnn, r.stream));
  DPT_CHECK_CUDNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&r.tensor));
  DPT_CHECK_CUDNN("cudnnSetTensor4dDescriptor",
                  cudnnSetTensor4dDescriptor(r.tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 4, 1, 1));
  DPT_CHECK_CUDNN("cudnnSoftmaxForward",
                  cudnnSoftmaxForward(r.dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                      r.tensor, r.a, &zero, r.tensor, r.b));
  DPT_CHECK_CUDA("cudaMemcpyAsync",
                 cudaMemcpyAsync(host, r.b, 4 * sizeof(float), cudaMemcpyDeviceToHost, r.stream));
  DPT_CHECK_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(r.stream));
  float sum = 0;
  for (int i = 0; i < 4; ++i) sum += std::exp(filled(i) - filled(3));
  for (int i = 0; i < 4; ++i) {
    const float want = std::exp(filled(i) - filled(3)) / sum;
    if (!close_to(host[i], want))
      return fail(error, error_size, "cuda:%d: cudnnSoftmaxForward: y[%d] = %g, expected %g", ordinal, i,
                  host[i], want);
  }

  // 4. NCCL: a one-rank all-reduce (sum) of a[0..kCount) into b returns the input.
  DPT_CHECK_NCCL("ncclCommInitAll", ncclCommInitAll(&r.comm, 1, &ordinal));
  DPT_CHECK_NCCL("ncclAllReduce", ncclAllReduce(r.a, r.b, kCount, ncclFloat, ncclSum, r.comm, r.stream));
  DPT_CHECK_CUDA("cudaMemcpyAsync",
                 cudaMemcpyAsync(host, r.b, sizeof host, cudaMemcpyDeviceToHost, r.stream));
  DPT_CHECK_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(r.stream));
  for (int i = 0; i < kCount; ++i)
    if (host[i] != filled(i))
      return fail(error, error_size, "cuda:%d: ncclAllReduce: y[%d] = %g, expected %g", ordinal, i, host[i],
                  filled(i));
  return 0;
}

}  // namespace dpt::cuda
