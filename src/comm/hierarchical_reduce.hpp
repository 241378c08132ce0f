// The gradient reduction over every device of every process: the process's devices sum in shared memory
// (ThreadCollective), device 0 of each process all-reduces that sum across processes (World, MPI), and
// hands the result back to the process's other devices.
#pragma once

#include <cstddef>

#include "comm/thread_collective.hpp"
#include "comm/world.hpp"

namespace dpt {

// Every local rank calls it with the same range of its own buffer; world may be nullptr (this process
// only). Returns the seconds of the reduction itself, not counting waits for late local peers. Throws as
// ThreadCollective and World do (an aborted collective, a timeout across processes).
// wire: what crosses between devices and between processes (a 16-bit type rounds each device's
// contribution, the process's sum and the sum over processes).
double hierarchical_all_reduce(ThreadCollective &local, const World *world, size_t rank, float *buffer,
                               size_t begin, size_t end, AllReduceAlgorithm algorithm, double timeout_seconds,
                               WireType wire = WireType::kF32);

}  // namespace dpt
