/**
 * @file platform.h
 * @brief The few operating-system calls of the CLI (clock, terminal detection), kept in one place
 * so that the program also builds for Windows.
 */
#ifndef DPTRAIN_CLI_PLATFORM_H
#define DPTRAIN_CLI_PLATFORM_H

#include <stdio.h>

/** @brief Seconds from a monotonic clock (only differences are meaningful). */
double platform_now_seconds(void);

/** @brief Nonzero when @p stream is an interactive terminal. */
int platform_is_terminal(FILE *stream);

/** @brief Nonzero when an MPI launcher (mpirun/mpiexec of Open MPI, MPICH, or a PMIx/PMI runtime such as
 * Slurm's srun) started this process. */
int platform_launched_by_mpi(void);

/** @brief The process's rank among the processes of its machine, as the launcher sets it (Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, PMI_LOCAL_RANK, Slurm's SLURM_LOCALID): nonzero
 * with *rank set, 0 when none is set (or it is not a number). */
int platform_local_rank(unsigned long long *rank);

/** @brief A stream that discards what is written (the output of processes other than 0); NULL on failure. */
FILE *platform_null_output(void);

#endif /* DPTRAIN_CLI_PLATFORM_H */
