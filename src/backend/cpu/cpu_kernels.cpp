#include "backend/cpu/cpu_kernels.hpp"

#include <cstring>
#include <string>

#include "comm/wire_type.hpp"
#include "core/error.hpp"

namespace dpt {

namespace {
const cpu::OpKernel &kernel(const char *op) {
  const cpu::OpKernel *k = cpu::find_op(op);
  DPT_REQUIRE(k != nullptr, DPT_ERROR_UNSUPPORTED, std::string("the CPU backend has no op '") + op + "'");
  return *k;
}
// The 16-bit conversions are the wire's (comm/wire_type.hpp: vectorised where the CPU allows).
WireType sixteen_bits(DType dtype) {
  DPT_REQUIRE(dtype == DType::kBF16 || dtype == DType::kF16, DPT_ERROR_INTERNAL, "not a 16-bit dtype");
  return dtype == DType::kBF16 ? WireType::kBF16 : WireType::kF16;
}
}  // namespace

void CpuKernels::narrow(const float *x, void *out, size_t count, DType dtype) {
  to_wire16(x, static_cast<uint16_t *>(out), count, sixteen_bits(dtype));
}

void CpuKernels::widen(const void *in, float *x, size_t count, DType dtype) {
  from_wire16(static_cast<const uint16_t *>(in), x, count, sixteen_bits(dtype));
}

void CpuKernels::check_supported(const char *op, DType dtype, DType matmul_dtype) const {
  DPT_REQUIRE(dtype == DType::kF32, DPT_ERROR_UNSUPPORTED,
              std::string("CPU devices run ") + op + " in float32 only in this version");
  DPT_REQUIRE(matmul_dtype == DType::kF32 || matmul_dtype == DType::kBF16 || matmul_dtype == DType::kF16,
              DPT_ERROR_UNSUPPORTED,
              std::string("CPU devices run ") + op +
                  "'s matrix products on float32, bfloat16 or float16 inputs only");
  if (std::strcmp(op, "flatten") != 0) kernel(op);
}

size_t CpuKernels::scratch_bytes(const dpt_op_call &call) const {
  const cpu::OpKernel &k = kernel(call.op);
  return k.scratch_bytes != nullptr ? k.scratch_bytes(call) : 0;
}

void CpuKernels::forward(const dpt_op_call &call) {
  if (call.n != 0 || call.phase != DPT_OP_PHASE_SINGLE) kernel(call.op).forward(call);
}

void CpuKernels::backward(const dpt_op_call &call) {
  if (call.n != 0 || call.phase != DPT_OP_PHASE_SINGLE) kernel(call.op).backward(call);
}

void CpuKernels::copy_to_device(float *device, const float *host, size_t count) {
  if (count != 0 && device != host) std::memcpy(device, host, count * sizeof(float));
}

void CpuKernels::copy_device(float *dst, const float *src, size_t count) {
  if (count != 0 && dst != src) std::memcpy(dst, src, count * sizeof(float));
}

void CpuKernels::copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) {
  if (count != 0 && device != host) std::memcpy(device, host, count * sizeof(int32_t));
}

void CpuKernels::copy_to_host(float *host, const float *device, size_t count) {
  if (count != 0 && device != host) std::memcpy(host, device, count * sizeof(float));
}

}  // namespace dpt
