// The NCCL communicator over the GPUs of one process (backend interface: comm_create ... comm_all_reduce),
// or over this process's GPUs as part of a multi-process job (nccl_unique_id, comm_create_multi); its test
// seam comm_inject_hang is in the test extension (dpt_backend_test_v1).
//
// All ranks are driven from one thread: a grouped all-reduce (ncclGroupStart/End) enqueues every rank's
// buffers on its context's stream, then the call waits, polling each rank's completion event and
// ncclCommGetAsyncError. A NCCL error, or a deadline that passes, aborts every rank's communicator
// (ncclCommAbort, which also ends NCCL kernels waiting for a peer) and returns a communication error:
// never a hang, never an exit. An aborted communicator refuses further work.
//
// A 16-bit wire (comm_all_reduce's wire_dtype) enqueues nccl_wire16.cpp's sequence instead of
// ncclAllReduce, under the same wait.
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int comm_create(int count, const int *ordinals, dpt_backend_comm **out, char *error, size_t error_size);
void comm_destroy(dpt_backend_comm *comm);
int comm_all_reduce(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, int32_t wire_dtype, double timeout_seconds,
                    char *error, size_t error_size);
int comm_inject_hang(dpt_backend_comm *comm, int rank, char *error, size_t error_size);
int nccl_unique_id(char *id, char *error, size_t error_size);
int comm_create_multi(const char *id, int world_ranks, int first_rank, int local_count, const int *ordinals,
                      dpt_backend_comm **out, char *error, size_t error_size);
// nccl_gather.cpp
int comm_all_gather_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                           float *const *buffers, const size_t *bounds, double timeout_seconds, char *error,
                           size_t error_size);
// nccl_f64.cpp
int comm_all_reduce_f64(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double *const *buffers,
                        size_t count, double timeout_seconds, char *error, size_t error_size);
// nccl_reduce.cpp
int comm_reduce_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                       const float *const *sends, float *const *recvs, const size_t *bounds,
                       int32_t wire_dtype, double timeout_seconds, char *error, size_t error_size);

// nccl_started.cpp
int comm_all_reduce_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                          float *const *buffers, const size_t *counts, int32_t wire_dtype, char *error,
                          size_t error_size);
int comm_wait_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double timeout_seconds,
                      char *error, size_t error_size);
int comm_join_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t keep, char *error,
                      size_t error_size);
// nccl_reduce.cpp
int comm_reduce_ranges_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                             const float *const *sends, float *const *recvs, const size_t *bounds,
                             int32_t wire_dtype, char *error, size_t error_size);
// nccl_exchange.cpp
int comm_exchange(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                  const dpt_backend_message *messages, size_t message_count, double timeout_seconds,
                  char *error, size_t error_size);
int comm_exchange_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                        const dpt_backend_message *messages, size_t message_count, char *error,
                        size_t error_size);

}  // namespace dpt::cuda
