// NCCL across processes (src/comm/nccl_world.*, the CUDA module's nccl_unique_id and comm_create_multi),
// run with mpirun. One binary, two cases (the first argument):
//   id          the unique id: process 0's id reaches every process byte for byte (ncclGetUniqueId needs no
//               GPU, so this runs on any machine with the module built); the global ranks (exclusive prefix
//               sum of the processes' GPU counts) and the refusal of a process without GPUs.
//   all_reduce  a NCCL communicator over every GPU of every process (each process takes its share of its
//               machine's GPUs), then one grouped all-reduce of integer-valued data, checked exactly (sums of
//               small integers are exact in FP32 in any order), then the same on the bfloat16 wire, checked
//               bit for bit against its rule on the host. Exits 77 (skipped) on every process, saying
//               why, when a process sees no GPU or its machine has fewer GPUs than processes (they would
//               share one, which NCCL refuses).
// Every decision that ends the run early is agreed over MPI, so that all processes exit the same way.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/module_loader.hpp"
#include "comm/nccl_world.hpp"
#include "comm/world.hpp"
#include "core/error.hpp"
#include "core/float16.hpp"

namespace {

constexpr double kTimeout = 120.0;
constexpr int kSkipped = 77;

int failures = 0;

void expect(bool condition, const dpt::World &world, const std::string &what) {
  if (condition) return;
  ++failures;
  std::fprintf(stderr, "process %zu: FAILED: %s\n", world.rank(), what.c_str());
}

// The number of processes for which flag is true.
int count_true(const dpt::World &world, bool flag) {
  double n = flag ? 1.0 : 0.0;
  world.all_reduce(&n, 1, kTimeout);
  return int(n);
}

int env_int(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? std::atoi(value) : fallback;
}

void test_unique_id(const dpt_backend_v2 &api, const dpt::World &world) {
  const dpt::NcclUniqueId id = dpt::share_nccl_unique_id(api, world, kTimeout);
  bool nonzero = false;
  for (const char c : id) nonzero = nonzero || c != 0;
  expect(nonzero, world, "the shared unique id is all zero bytes");
  // Identical everywhere: sum b = N a and sum b^2 = N a^2 for every byte only when every b equals a.
  const size_t n = id.size();
  std::vector<double> moments(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const double b = double(static_cast<unsigned char>(id[i]));
    moments[i] = b;
    moments[n + i] = b * b;
  }
  world.all_reduce(moments.data(), moments.size(), kTimeout);
  const double processes = double(world.size());
  size_t differing = 0;
  for (size_t i = 0; i < n; ++i) {
    const double b = double(static_cast<unsigned char>(id[i]));
    if (moments[i] != processes * b || moments[n + i] != processes * b * b) ++differing;
  }
  expect(differing == 0, world, std::to_string(differing) + " of the 128 id bytes differ between processes");
  // A fresh id of this process differs from the shared one: the processes got it by the broadcast.
  dpt::NcclUniqueId own{};
  char error[512] = "";
  expect(api.nccl_unique_id(own.data(), error, sizeof error) == DPT_BACKEND_OK, world,
         std::string("nccl_unique_id: ") + error);
  expect(own != id, world, "a fresh unique id equals the shared one");
  if (world.rank() == 0)
    std::printf("unique id: 128 bytes created by process 0 (ncclGetUniqueId), identical on %zu processes\n",
                world.size());
}

void test_global_ranks(const dpt::World &world) {
  // Process p has p + 1 GPUs: its first rank is 0 + 1 + ... + p = p (p + 1) / 2.
  const int p = int(world.rank()), n = int(world.size());
  const dpt::NcclRanks ranks = dpt::nccl_world_ranks(world, size_t(p + 1), kTimeout);
  expect(ranks.first_rank == p * (p + 1) / 2, world,
         "first rank " + std::to_string(ranks.first_rank) + ", expected " + std::to_string(p * (p + 1) / 2));
  expect(
      ranks.world_ranks == n * (n + 1) / 2, world,
      "world ranks " + std::to_string(ranks.world_ranks) + ", expected " + std::to_string(n * (n + 1) / 2));
  // A process without GPUs: every process refuses, with the same reason.
  dpt_status status = DPT_OK;
  std::string message;
  try {
    dpt::nccl_world_ranks(world, world.rank() == world.size() - 1 ? 0 : 1, kTimeout);
  } catch (const dpt::Error &e) {
    status = e.status();
    message = e.what();
  }
  expect(
      status == DPT_ERROR_INVALID_ARGUMENT && message.find("has no GPU") != std::string::npos, world,
      "a process without GPU was not refused (status " + std::to_string(int(status)) + ": " + message + ")");
}

float value(int global_rank, size_t buffer, size_t i) {
  return float(int((i * 7 + size_t(global_rank) * 131 + buffer * 17) % 2001) - 1000);
}

int test_all_reduce(const dpt_backend_v2 &api, const dpt::World &world) {
  char error[512] = "";
  int gpus = 0;
  if (api.device_count(&gpus, error, sizeof error) != DPT_BACKEND_OK) gpus = 0;
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", int(world.rank()));
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", int(world.size()));
  if (count_true(world, gpus == 0) > 0) {
    if (gpus == 0)
      std::printf("SKIPPED: process %zu sees no GPU (%s); NCCL across processes needs one per process\n",
                  world.rank(), error);
    return kSkipped;
  }
  if (count_true(world, gpus < local_size) > 0) {
    if (world.rank() == 0)
      std::printf(
          "SKIPPED: %d GPU(s) for %d processes on this machine: the processes would share a GPU, which "
          "NCCL refuses as two ranks of one communicator\n",
          gpus, local_size);
    return kSkipped;
  }
  std::vector<int> ordinals;
  for (int g = local_rank * gpus / local_size; g < (local_rank + 1) * gpus / local_size; ++g)
    ordinals.push_back(g);
  dpt::BackendComm comm = dpt::create_nccl_world_comm(api, world, ordinals, kTimeout);
  const dpt::NcclRanks ranks = dpt::nccl_world_ranks(world, ordinals.size(), kTimeout);

  const size_t counts[] = {1, 4099, (size_t(1) << 20) + 5};
  const size_t buffers_per_rank = sizeof counts / sizeof counts[0];
  std::vector<dpt_backend_context *> contexts(ordinals.size(), nullptr);
  std::vector<float *> buffers(ordinals.size() * buffers_per_rank, nullptr);
  int rc = 0;
  for (size_t r = 0; r < ordinals.size() && rc == 0; ++r) {
    rc = api.context_create(ordinals[r], nullptr, &contexts[r], error, sizeof error);
    for (size_t b = 0; b < buffers_per_rank && rc == 0; ++b) {
      void *device = nullptr;
      rc = api.mem_alloc(contexts[r], counts[b] * sizeof(float), &device, error, sizeof error);
      buffers[r * buffers_per_rank + b] = static_cast<float *>(device);
    }
  }
  expect(rc == 0, world, std::string("setting up the buffers: ") + error);
  // The float32 wire (integer sums, exact in any order), then the bfloat16 one: each global rank's value
  // rounded, the float32 sum in global rank order from +0, rounded (backend_interface.h), on every process.
  for (const int32_t wire : {DPT_DTYPE_F32, DPT_DTYPE_BF16}) {
    for (size_t r = 0; r < ordinals.size() && rc == 0; ++r)
      for (size_t b = 0; b < buffers_per_rank && rc == 0; ++b) {
        std::vector<float> host(counts[b]);
        for (size_t i = 0; i < host.size(); ++i) host[i] = value(ranks.first_rank + int(r), b, i);
        rc = api.copy_to_device(contexts[r], buffers[r * buffers_per_rank + b], host.data(),
                                host.size() * sizeof(float), error, sizeof error);
        if (rc == 0) rc = api.context_synchronize(contexts[r], error, sizeof error);
      }
    expect(rc == 0, world, std::string("filling the buffers: ") + error);
    if (rc == 0) {
      rc = api.comm_all_reduce(comm.get(), contexts.data(), buffers_per_rank, buffers.data(), counts, wire,
                               kTimeout, error, sizeof error);
      expect(rc == 0, world, std::string("comm_all_reduce: ") + error);
    }
    for (size_t r = 0; r < ordinals.size() && rc == 0; ++r)
      for (size_t b = 0; b < buffers_per_rank && rc == 0; ++b) {
        std::vector<float> host(counts[b]);
        rc = api.copy_to_host(contexts[r], host.data(), buffers[r * buffers_per_rank + b],
                              host.size() * sizeof(float), error, sizeof error);
        if (rc == 0) rc = api.context_synchronize(contexts[r], error, sizeof error);
        expect(rc == 0, world, std::string("copy_to_host: ") + error);
        size_t wrong = 0;
        for (size_t i = 0; i < host.size() && rc == 0; ++i) {
          float sum = 0.0f;
          for (int g = 0; g < ranks.world_ranks; ++g)
            sum += wire == DPT_DTYPE_F32 ? value(g, b, i) : dpt::round_to_bf16(value(g, b, i));
          if (wire != DPT_DTYPE_F32) sum = dpt::round_to_bf16(sum);
          if (std::memcmp(&host[i], &sum, sizeof sum) != 0) ++wrong;
        }
        expect(wrong == 0, world,
               "cuda:" + std::to_string(ordinals[r]) + " buffer " + std::to_string(b) + ": " +
                   std::to_string(wrong) + " of " + std::to_string(counts[b]) +
                   (wire == DPT_DTYPE_F32 ? " sums differ from the exact integer sums"
                                          : " bf16-wire sums differ from the rule's bits"));
      }
  }
  for (dpt_backend_context *ctx : contexts) api.context_destroy(ctx);
  if (world.rank() == 0)
    std::printf("all-reduce over %d GPUs of %zu processes (ranks of this process: %d..%d)\n",
                ranks.world_ranks, world.size(), ranks.first_rank,
                ranks.first_rank + int(ordinals.size()) - 1);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  if (which != "id" && which != "all_reduce") {
    std::fprintf(stderr, "usage: mpirun -np 2 %s id|all_reduce\n", argv[0]);
    return 2;
  }
  // The core is linked into this binary: point the loaders at the modules' build directory.
  setenv("DPTRAIN_BACKEND_PATH", DPT_TEST_MODULE_DIR, 0);
  try {
    const dpt::World &world = dpt::World::get();
    const dpt::BackendModule module = dpt::load_cuda_backend();
    if (count_true(world, module.api == nullptr) > 0) {
      std::fprintf(stderr, "process %zu: FAILED: the CUDA module did not load: %s\n", world.rank(),
                   module.reason.c_str());
      return 1;
    }
    int result = 0;
    if (which == "id") {
      test_unique_id(*module.api, world);
      test_global_ranks(world);
    } else {
      result = test_all_reduce(*module.api, world);
    }
    const int failed_processes = count_true(world, failures > 0);
    if (result == kSkipped) return kSkipped;
    if (world.rank() == 0)
      std::printf("%d passed, %d failed\n", failed_processes == 0 ? 1 : 0, failed_processes == 0 ? 0 : 1);
    return failed_processes == 0 ? 0 : 1;
  } catch (const dpt::Error &e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
}
