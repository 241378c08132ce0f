// The entry point of libdptrain_cuda.so: the only symbol the module exports (see dptrain_cuda.map). Also the
// op entry points (op_supported, op_forward, op_backward: the kernels of ops/ found by name) and the test
// extension (get_extension).
#include <cstring>

#include "cuda/accumulate.hpp"
#include "cuda/context.hpp"
#include "cuda/convert.hpp"
#include "cuda/copies_ahead.hpp"
#include "cuda/discovery.hpp"
#include "cuda/loss.hpp"
#include "cuda/memory.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/ops/ops.hpp"
#include "cuda/optimizer.hpp"
#include "cuda/self_test.hpp"
#include "cuda/virtual_all_reduce.hpp"
#include "interface/backend_interface.h"

namespace {

using namespace dpt::cuda;

// Matrix products take float32, bfloat16 or float16 inputs (dpt_op_call::matmul_dtype, ops/matmul.hpp).
bool known_matmul_dtype(int32_t dtype) {
  return dtype == DPT_DTYPE_F32 || dtype == DPT_DTYPE_BF16 || dtype == DPT_DTYPE_F16;
}

int op_supported(const char *op, int32_t dtype, int32_t matmul_dtype) {
  return dtype == DPT_DTYPE_F32 && known_matmul_dtype(matmul_dtype) && find_op(op) != nullptr ? 1 : 0;
}

// Finds the call's kernel, checks what every op shares and runs the pass.
int run_op(dpt_backend_context *ctx, const dpt_op_call *call, bool forward, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *pass = forward ? kForward : kBackward;
  return with_context(ctx, e, pass, [&](dpt_backend_context &c) {
    if (call == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL call", c.ordinal, pass);
    if (call->op == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL op name", c.ordinal, pass);
    if (!known_matmul_dtype(call->matmul_dtype))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: %s: %.64s: matmul_dtype %d (float32, bfloat16 or float16)", c.ordinal, pass,
                    call->op, int(call->matmul_dtype));
    const OpKernel *op = find_op(call->op);
    if (op == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: %s: op \"%.64s\" is not supported by the CUDA module (no kernel)", c.ordinal,
                    pass, call->op);
    const OpPass run = forward ? op->forward : op->backward;
    if (run == nullptr)
      return invalid_call(c, *call, pass, e,
                          "a view (the executor aliases its input): there is no kernel to run");
    if (const int rc = check_call(c, *op, *call, pass, e)) return rc;
    return run(c, *call, e);
  });
}

int op_forward(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size) {
  return run_op(ctx, call, true, error, error_size);
}

int op_backward(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size) {
  return run_op(ctx, call, false, error, error_size);
}

const dpt_backend_test_v1 kTestExtension = {
    .struct_size = sizeof(dpt_backend_test_v1),
    .self_test = &self_test,
    .comm_inject_hang = &comm_inject_hang,
};

const void *get_extension(const char *name) {
  if (name != nullptr && std::strcmp(name, DPT_BACKEND_TEST_EXTENSION) == 0) return &kTestExtension;
  return nullptr;
}

// Designated initializers: a member left out, or out of order, does not compile.
const dpt_backend_v2 kBackend = {
    .abi_version = DPT_BACKEND_ABI_VERSION,
    .struct_size = sizeof(dpt_backend_v2),
    .name = "cuda",
    .device_count = &device_count,
    .device_props = &device_props,
    .can_access_peer = &can_access_peer,
    .versions = &versions,
    .context_create = &context_create,
    .context_destroy = &context_destroy,
    .context_synchronize = &context_synchronize,
    .mem_alloc = &mem_alloc,
    .mem_free = &mem_free,
    .mem_in_use = &mem_in_use,
    .mem_set = &mem_set,
    .copy_to_device = &copy_to_device,
    .copy_to_host = &copy_to_host,
    .copy_device = &copy_device,
    .op_supported = &op_supported,
    .op_forward = &op_forward,
    .op_backward = &op_backward,
    .accumulate = &accumulate,
    .softmax_cross_entropy = &softmax_cross_entropy,
    .optimizer_update = &optimizer_update,
    .l2_norm = &l2_norm,
    .scale = &scale,
    .convert = &convert,
    .comm_create = &comm_create,
    .comm_destroy = &comm_destroy,
    .comm_all_reduce = &comm_all_reduce,
    .virtual_all_reduce = &virtual_all_reduce,
    .nccl_unique_id = &nccl_unique_id,
    .comm_create_multi = &comm_create_multi,
    .get_extension = &get_extension,
    .comm_all_gather_ranges = &comm_all_gather_ranges,
    .comm_all_reduce_f64 = &comm_all_reduce_f64,
    .comm_reduce_ranges = &comm_reduce_ranges,
    .l2_block_sums = &l2_block_sums,
    .comm_all_reduce_start = &comm_all_reduce_start,
    .comm_wait_started = &comm_wait_started,
    .comm_reduce_ranges_start = &comm_reduce_ranges_start,
    .comm_join_started = &comm_join_started,
    .copy_device_ahead = &copy_device_ahead,
    .copy_join_ahead = &copy_join_ahead,
    .comm_exchange = &comm_exchange,
    .comm_exchange_start = &comm_exchange_start,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dpt_backend_v2 *dptrain_cuda_backend_v2(void) {
  return &kBackend;
}
