// The simulated CUDA backend (docs/cuda-sim.md): a test double of libdptrain_cuda.so that implements the
// backend interface (modules/interface/backend_interface.h) on the host, with no GPU and no CUDA. Its ops
// are the CPU reference kernels (src/backend/cpu/ops, library dptrain_cpu_ops) run behind the interface.
//
// What makes it a useful double:
//  * device memory lives in a memfd region mapped twice: callers get addresses in a PROT_NONE view (a host
//    dereference of a device pointer crashes), the simulator works through a read-write view of the same
//    pages; every pointer argument is checked to lie inside one live allocation of the right device;
//  * every copy and kernel is queued on its context and runs only when the context is synchronized (or a
//    call that waits for the stream): results reach the host, and host sources are read, at that moment;
//  * failures on demand (DPTRAIN_SIM_CUDA_FAIL), out of memory at a chosen capacity, hung collectives;
//  * op calls checked by the rules of op_call.h that hold for every op (counts, dtypes, ranks, extents); the
//    ops themselves are dptrain_cpu_ops' kernels, found by name, so that a new CPU op runs here at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "interface/backend_interface.h"

namespace dpt_sim {

// ---- errors -------------------------------------------------------------------------------------------

// The caller's error buffer.
struct Error {
  char *text;
  size_t size;
};

// Writes one printf-style line into e (newlines become spaces) and returns code.
int report(const Error &e, int code, const char *format, ...) __attribute__((format(printf, 3, 4)));

// ---- configuration (config.cpp) -----------------------------------------------------------------------

constexpr int kMaxDevices = 64;
constexpr uint64_t kDefaultCapacity = uint64_t(512) << 20;

struct Config {
  int devices = 2;                       // DPTRAIN_SIM_CUDA_DEVICES
  uint64_t capacity = kDefaultCapacity;  // DPTRAIN_SIM_CUDA_MEMORY, bytes per device
  std::string problem;                   // why the environment is unusable; empty when it is fine
};

// Read once, at the module's first use.
const Config &config();

// The number of devices, or a report (0 devices, a bad environment) naming `call` when ordinal >= 0.
int device_count_or_report(const Error &e, int ordinal, const char *call, int &count);

// DPTRAIN_SIM_CUDA_FAIL, read at every call: what happens to this call of member on device ordinal
// (kAnyOrdinal for a member without a device: device_count). An op call's member is "op_forward(conv2d)":
// entries of "op_forward" match it as well as entries of "op_forward(conv2d)".
constexpr int kAnyOrdinal = -1000000;
enum class Fault { kNone, kNow, kAsync };
Fault fault(const char *member, int ordinal);
// The report of an injected failure.
int simulated_failure(const Error &e, int ordinal, const char *member, bool async);

// ---- device memory (memory.cpp) -----------------------------------------------------------------------

struct Allocation {
  size_t offset = 0;    // from the region's start
  size_t bytes = 0;     // as requested
  size_t reserved = 0;  // rounded up to the alignment
  uint64_t serial = 0;  // unique in the process: a freed and reused range has another
  const dpt_backend_context *owner = nullptr;
};

// One simulated GPU: its memory region and allocator. Created on first use, never destroyed.
struct Device {
  int ordinal = 0;
  uint64_t capacity = 0;
  int fd = -1;
  char *device_base = nullptr;  // PROT_NONE view: what callers get
  char *host_base = nullptr;    // read-write view of the same pages: what the simulator uses

  std::mutex mutex;                      // guards the maps below (contexts of one device share them)
  std::map<size_t, size_t> free_blocks;  // offset -> bytes, coalesced
  std::map<size_t, Allocation> allocations;
  uint64_t reserved = 0;  // bytes taken from the region

  bool contains(const void *p) const {
    const auto a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(device_base);
    return a >= base && a - base < capacity;
  }
};

// The device of ordinal (0 .. count-1), its region made on first use; nullptr and a report on failure.
Device *get_device(int ordinal, const char *call, const Error &e);
// The device whose region holds p, or nullptr.
Device *device_of(const void *p);
// Bytes taken on a device (0 when its region was never made).
uint64_t reserved_bytes(int ordinal);

int allocate(Device &d, size_t bytes, const dpt_backend_context *owner, void **out, const Error &e);
// Frees p if owner allocated it: true and its size; false when it is not owner's.
bool release(Device &d, void *p, const dpt_backend_context *owner, size_t &bytes);
// True when p is the start of an allocation of owner.
bool owned_by(Device &d, const void *p, const dpt_backend_context *owner);
// Frees every allocation of owner (context_destroy).
void release_all(Device &d, const dpt_backend_context *owner);

// A checked buffer argument: [address, address + bytes) inside one live allocation.
struct Span {
  Device *device = nullptr;  // nullptr: an absent optional argument
  const char *name = "";
  const void *address = nullptr;
  char *host = nullptr;  // the same bytes in the read-write view
  size_t bytes = 0;
  uint64_t serial = 0;
  explicit operator bool() const { return device != nullptr; }
  float *f() const { return reinterpret_cast<float *>(host); }
};

enum class Where { kContextDevice, kAnyDevice };

// Checks one pointer argument of call (alignment in bytes). NULL is an error unless optional.
int resolve(const dpt_backend_context &c, const char *call, const char *name, const void *p, size_t bytes,
            size_t alignment, Where where, bool optional, Span &out, const Error &e);
// A float buffer of count elements on the context's device (optional: NULL allowed).
int floats(const dpt_backend_context &c, const char *call, const char *name, const void *p, size_t count,
           bool optional, Span &out, const Error &e);
// The product of the factors; false on overflow.
bool product(std::initializer_list<size_t> factors, size_t &out);
// Bytes of count elements of size each; false on overflow.
bool checked_bytes(size_t count, size_t size, size_t &bytes);
// True when the allocation the span was checked against is still allocated.
bool still_allocated(const Span &s);
// True when p lies in any device's region (a device pointer where a host one belongs).
bool is_device_pointer(const void *p);

// ---- contexts and their queues (context.cpp) -----------------------------------------------------------

struct Op {
  const char *call;
  std::vector<Span> spans;                // re-checked when the operation runs (use after free)
  std::function<int(const Error &)> run;  // 0, or a report
};

// A copy_device_ahead not yet joined (copies_ahead.cpp): what its source held when it ran.
struct AheadCopy {
  Span to, from;
  std::vector<char> values;
  bool taken = false;  // false: the stream had failed, the copy did not run
};

}  // namespace dpt_sim

struct dpt_backend_context {
  int ordinal = 0;
  uint32_t flags = 0;
  dpt_sim::Device *device = nullptr;
  uint64_t bytes_in_use = 0;  // guarded by device->mutex

  std::mutex queue_mutex;  // guards queue and the pending error
  std::vector<dpt_sim::Op> queue;
  int pending_code = 0;  // the first error of queued work, reported by the next synchronizing call
  char pending_error[512] = "";
  std::mutex run_mutex;  // one drain at a time

  bool async_fault = false;  // DPTRAIN_SIM_CUDA_FAIL ...:async for this call: queue a failure instead

  // copy_device_ahead's copies queued since the last copy_join_ahead (used by the context's one thread).
  std::vector<std::shared_ptr<dpt_sim::AheadCopy>> ahead;
};

namespace dpt_sim {

// True for a context made by context_create and not yet destroyed (guards against stale handles).
bool context_alive(const dpt_backend_context *c);

// Runs f(context) behind an exception barrier after the NULL, liveness and injected-failure checks.
int with_context(dpt_backend_context *ctx, const Error &e, const char *call,
                 const std::function<int(dpt_backend_context &)> &f) noexcept;

// Queues work on the context's stream; its spans are re-checked when it runs.
int enqueue(dpt_backend_context &c, const char *call, std::vector<Span> spans, std::function<void()> work);
// The same for work that may fail: its code and report become the context's pending error.
int enqueue_checked(dpt_backend_context &c, const char *call, std::vector<Span> spans,
                    std::function<int(const Error &)> work);
// Runs everything queued on c; errors stay pending on c.
void drain(dpt_backend_context &c);
// Drains c, then reports and clears its pending error (0 when none).
int synchronize(dpt_backend_context &c, const Error &e);
// Drains c and reports its pending error without clearing it.
int drain_and_peek(dpt_backend_context &c, const Error &e);

}  // namespace dpt_sim

// ---- the backend interface's members --------------------------------------------------------------------

namespace dpt_sim {

// discovery.cpp
int device_count(int *count, char *error, size_t error_size);
int device_props(int ordinal, dpt_backend_device_props *props, char *error, size_t error_size);
int can_access_peer(int ordinal, int peer, int *can_access, char *error, size_t error_size);
void versions(dpt_backend_versions *versions);
// Checks a device's ordinal for call, then the injected failures of call on it: 0 or a report.
int check_ordinal(const Error &e, int ordinal, const char *call);

// self_test.cpp (the test extension, dpt_backend_test_v1)
int self_test(int ordinal, char *error, size_t error_size);

// context.cpp
int context_create(int ordinal, const dpt_backend_context_options *options, dpt_backend_context **out,
                   char *error, size_t error_size);
void context_destroy(dpt_backend_context *ctx);
int context_synchronize(dpt_backend_context *ctx, char *error, size_t error_size);

// copies.cpp
int mem_alloc(dpt_backend_context *ctx, size_t bytes, void **out, char *error, size_t error_size);
int mem_free(dpt_backend_context *ctx, void *ptr, char *error, size_t error_size);
int mem_in_use(dpt_backend_context *ctx, uint64_t *bytes, char *error, size_t error_size);
int mem_set(dpt_backend_context *ctx, void *ptr, int value, size_t bytes, char *error, size_t error_size);
int copy_to_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                   size_t error_size);
int copy_to_host(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                 size_t error_size);
int copy_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                size_t error_size);

// copies_ahead.cpp
int copy_device_ahead(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                      size_t error_size);
int copy_join_ahead(dpt_backend_context *ctx, char *error, size_t error_size);

// ops.cpp: the CPU reference kernels behind the op members
int op_supported(const char *op, int32_t dtype, int32_t matmul_dtype);
int op_forward(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size);
int op_backward(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size);
int accumulate(dpt_backend_context *ctx, float *y, const float *x, size_t count, char *error,
               size_t error_size);
// True for the label of an op call the simulator runs, "op_forward(conv2d)" (DPTRAIN_SIM_CUDA_FAIL entries).
bool op_label_known(const std::string &member);

// descriptors.cpp: the call's shapes by the core's descriptor of its op (src/ops)
struct DescriptorNeeds {
  bool found = false;           // the op has a descriptor
  size_t saved_bytes = 0;       // of saved that the op keeps for n samples
  size_t statistics_count = 0;  // doubles of statistics (both sets)
};
// "" when the call's tensors are those the op's descriptor lays out from its inputs and attributes (or the op
// has none), else why not. Needs the generic checks first (counts, ranks, positive dims).
std::string descriptor_problem(const dpt_op_call &call, DescriptorNeeds &needs);

// training.cpp
int softmax_cross_entropy(dpt_backend_context *ctx, size_t n, size_t classes, const float *logits,
                          const int32_t *labels, float *dlogits, dpt_backend_loss *out, char *error,
                          size_t error_size);
int optimizer_update(dpt_backend_context *ctx, const dpt_backend_optimizer *optimizer, uint64_t t, float lr,
                     float grad_scale, float *params, const float *grads, float *state, size_t count,
                     char *error, size_t error_size);
int l2_norm(dpt_backend_context *ctx, const float *x, size_t count, double *out, char *error,
            size_t error_size);
int l2_block_sums(dpt_backend_context *ctx, const float *x, size_t begin, size_t end, double *sums,
                  char *error, size_t error_size);
int scale(dpt_backend_context *ctx, float *x, size_t count, float alpha, char *error, size_t error_size);
int convert(dpt_backend_context *ctx, void *dst, int32_t dst_dtype, const void *src, int32_t src_dtype,
            size_t count, char *error, size_t error_size);

// collectives.cpp
int comm_create(int count, const int *ordinals, dpt_backend_comm **out, char *error, size_t error_size);
void comm_destroy(dpt_backend_comm *comm);
int comm_all_reduce(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, int32_t wire_dtype, double timeout_seconds,
                    char *error, size_t error_size);
int comm_inject_hang(dpt_backend_comm *comm, int rank, char *error, size_t error_size);  // test extension
int virtual_all_reduce(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                       size_t count, int32_t wire_dtype, char *error, size_t error_size);
int nccl_unique_id(char *id, char *error, size_t error_size);
int comm_create_multi(const char *id, int world_ranks, int first_rank, int local_count, const int *ordinals,
                      dpt_backend_comm **out, char *error, size_t error_size);
// gather.cpp
int comm_all_gather_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                           float *const *buffers, const size_t *bounds, double timeout_seconds, char *error,
                           size_t error_size);
// all_reduce_f64.cpp
int comm_all_reduce_f64(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double *const *buffers,
                        size_t count, double timeout_seconds, char *error, size_t error_size);
// reduce_ranges.cpp
int comm_reduce_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                       const float *const *sends, float *const *recvs, const size_t *bounds,
                       int32_t wire_dtype, double timeout_seconds, char *error, size_t error_size);
// started.cpp
int comm_all_reduce_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                          float *const *buffers, const size_t *counts, int32_t wire_dtype, char *error,
                          size_t error_size);
int comm_wait_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double timeout_seconds,
                      char *error, size_t error_size);
int comm_reduce_ranges_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                             const float *const *sends, float *const *recvs, const size_t *bounds,
                             int32_t wire_dtype, char *error, size_t error_size);
int comm_join_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t keep, char *error,
                      size_t error_size);
// exchange.cpp
int comm_exchange(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                  const dpt_backend_message *messages, size_t message_count, double timeout_seconds,
                  char *error, size_t error_size);
int comm_exchange_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                        const dpt_backend_message *messages, size_t message_count, char *error,
                        size_t error_size);

// module.cpp: DPT_BACKEND_TEST_EXTENSION, or NULL
const void *get_extension(const char *name);

}  // namespace dpt_sim
