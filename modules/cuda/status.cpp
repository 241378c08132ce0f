#include "cuda/status.hpp"

#include <cstdarg>
#include <cstdio>

namespace dpt::cuda {

namespace {

void write_line(const Error &e, const char *format, va_list args) {
  if (e.text == nullptr || e.size == 0) return;
  std::vsnprintf(e.text, e.size, format, args);
  for (char *c = e.text; *c != '\0'; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
}

}  // namespace

int report(const Error &e, int code, const char *format, ...) {
  va_list args;
  va_start(args, format);
  write_line(e, format, args);
  va_end(args);
  return code;
}

int cuda_failed(const Error &e, int ordinal, const char *call, cudaError_t status) {
  cudaGetLastError();
  int code = DPT_BACKEND_ERROR;
  if (status == cudaErrorMemoryAllocation) code = DPT_BACKEND_ERROR_OUT_OF_MEMORY;
  if (status == cudaErrorInvalidDevice || status == cudaErrorInvalidValue ||
      status == cudaErrorInvalidDevicePointer)
    code = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  return report(e, code, "cuda:%d: %s: error %d, %s: %s", ordinal, call, int(status),
                cudaGetErrorName(status), cudaGetErrorString(status));
}

int cublas_failed(const Error &e, int ordinal, const char *call, cublasStatus_t status) {
  int code = DPT_BACKEND_ERROR;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) code = DPT_BACKEND_ERROR_OUT_OF_MEMORY;
  if (status == CUBLAS_STATUS_INVALID_VALUE) code = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  return report(e, code, "cuda:%d: %s: %s", ordinal, call, cublasGetStatusString(status));
}

int cudnn_failed(const Error &e, int ordinal, const char *call, cudnnStatus_t status) {
  // cuDNN 9 codes are grouped by thousands: 2xxx bad parameter, 4003/4004 allocation failures.
  int code = DPT_BACKEND_ERROR;
  if (int(status) / 1000 == 2) code = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    code = DPT_BACKEND_ERROR_OUT_OF_MEMORY;
  return report(e, code, "cuda:%d: %s: %s", ordinal, call, cudnnGetErrorString(status));
}

int nccl_failed(const Error &e, const char *ranks, const char *call, ncclResult_t status, ncclComm_t comm) {
  const int code = status == ncclInvalidArgument || status == ncclInvalidUsage
                       ? DPT_BACKEND_ERROR_INVALID_ARGUMENT
                       : DPT_BACKEND_ERROR_COMMUNICATION;
  const char *detail = ncclGetLastError(comm);
  return report(e, code, "%s: %s: %s%s%s", ranks, call, ncclGetErrorString(status),
                detail != nullptr && detail[0] != '\0' ? ": " : "", detail != nullptr ? detail : "");
}

}  // namespace dpt::cuda
