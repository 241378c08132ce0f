/**
 * @file world.h
 * @brief Several processes training one model: the MPI communicator.
 *
 * A trainer created with DPT_COMMUNICATOR_MPI spans every process of the MPI job (started with
 * `mpirun`): each process splits its share of every global batch across its own devices, the gradients
 * are reduced across the devices of each process, all-reduced across the processes with MPI, and
 * broadcast back. On CUDA devices one NCCL communicator spans every process's GPUs instead (each process's
 * replicas on GPUs of their own). MPI is reached through the module libdptrain_mpi.so, loaded on first use, so
 * libdptrain.so works where no MPI is installed (those calls then return DPT_ERROR_UNSUPPORTED).
 * See docs/distributed.md.
 *
 * Threading: MPI is initialized for serialized use (MPI_THREAD_SERIALIZED). dptrain calls MPI from several
 * of its threads, one call at a time, on duplicates of MPI_COMM_WORLD of its own. Do not call MPI yourself
 * while a trainer of the MPI communicator is working.
 */
#ifndef DPTRAIN_WORLD_H
#define DPTRAIN_WORLD_H

#include <stddef.h>

#include "export.h"
#include "status.h"

DPT_EXTERN_C_BEGIN

/** @brief How a trainer's replicas communicate. */
typedef enum dpt_communicator {
  DPT_COMMUNICATOR_LOCAL = 0, /**< The devices of this process only (default). */
  DPT_COMMUNICATOR_MPI = 1    /**< Every process of the MPI job, each with its own devices. */
} dpt_communicator;

/**
 * @brief This process's rank and the number of processes of the MPI job.
 *
 * Loads libdptrain_mpi.so and initializes MPI when the application has not (a program started without
 * `mpirun` is a job of one process). Every process must call it (or create an MPI trainer) at the same
 * point: initialization is collective.
 * @return DPT_ERROR_UNSUPPORTED when there is no usable MPI module (the message says why),
 *         DPT_ERROR_COMMUNICATION when MPI fails to start, DPT_ERROR_INVALID_STATE after
 * dpt_world_finalize().
 */
DPT_API dpt_status dpt_world_get(size_t *rank, size_t *size);

/**
 * @brief Ends MPI if dptrain started it (a no-op when the application initialized MPI itself, or when MPI
 * was never used). Call it once, after destroying every MPI trainer, before the process exits; dptrain
 * otherwise does it at exit. MPI cannot be started again afterwards.
 */
DPT_API dpt_status dpt_world_finalize(void);

DPT_EXTERN_C_END

#endif /* DPTRAIN_WORLD_H */
