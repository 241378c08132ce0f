// The entry point of libdptrain_cuda.so: the only symbol the module exports (see dptrain_cuda.map).
#include "interface/backend_interface.h"
#include "cuda/activation.hpp"
#include "cuda/bias.hpp"
#include "cuda/context.hpp"
#include "cuda/conv2d.hpp"
#include "cuda/dense.hpp"
#include "cuda/discovery.hpp"
#include "cuda/loss.hpp"
#include "cuda/memory.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/optimizer.hpp"
#include "cuda/pooling.hpp"
#include "cuda/self_test.hpp"
#include "cuda/virtual_all_reduce.hpp"

namespace {

using namespace dpt::cuda;

// Designated initializers: a member left out, or out of order, does not compile.
const dpt_backend_v2 kBackend = {
    .abi_version = DPT_BACKEND_ABI_VERSION,
    .struct_size = sizeof(dpt_backend_v2),
    .name = "cuda",
    .device_count = &device_count,
    .device_props = &device_props,
    .can_access_peer = &can_access_peer,
    .versions = &versions,
    .self_test = &self_test,
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
    .dense_forward = &dense_forward,
    .dense_backward = &dense_backward,
    .bias_add = &bias_add,
    .bias_grad = &bias_grad,
    .conv2d_forward = &conv2d_forward,
    .conv2d_backward_data = &conv2d_backward_data,
    .conv2d_backward_filter = &conv2d_backward_filter,
    .conv2d_backward_bias = &conv2d_backward_bias,
    .pool_forward = &pool_forward,
    .pool_backward = &pool_backward,
    .activation_forward = &activation_forward,
    .activation_backward = &activation_backward,
    .softmax_cross_entropy = &softmax_cross_entropy,
    .optimizer_update = &optimizer_update,
    .l2_norm = &l2_norm,
    .scale = &scale,
    .comm_create = &comm_create,
    .comm_destroy = &comm_destroy,
    .comm_all_reduce = &comm_all_reduce,
    .comm_inject_hang = &comm_inject_hang,
    .virtual_all_reduce = &virtual_all_reduce,
    .nccl_unique_id = &nccl_unique_id,
    .comm_create_multi = &comm_create_multi,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dpt_backend_v2 *dptrain_cuda_backend_v2(void) {
  return &kBackend;
}
