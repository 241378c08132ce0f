// The entry point of the simulated libdptrain_cuda.so: the only symbol it exports (dptrain_sim_cuda.map),
// its table, and the test extension that get_extension returns.
#include <cstring>

#include "sim.hpp"

namespace dpt_sim {

namespace {

// Designated initializers: a member left out, or out of order, does not compile.
const dpt_backend_test_v1 kTestExtension = {
    .struct_size = sizeof(dpt_backend_test_v1),
    .self_test = &self_test,
    .comm_inject_hang = &comm_inject_hang,
};

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

const void *get_extension(const char *name) {
  if (name != nullptr && std::strcmp(name, DPT_BACKEND_TEST_EXTENSION) == 0) return &kTestExtension;
  return nullptr;
}

}  // namespace dpt_sim

extern "C" __attribute__((visibility("default"))) const dpt_backend_v2 *dptrain_cuda_backend_v2(void) {
  return &dpt_sim::kBackend;
}
