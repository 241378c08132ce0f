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

// The same sum where each process needs only its span of the range (the optimizer state sharded across
// every process's devices): the process's devices reduce the range to device 0 in shared memory (a
// reduce-scatter whose bounds, to_first, give device 0 the whole vector: local ranks + 1 offsets {0, n, n,
// ...}; the all-reduce's bits, without its copies to the other devices), device 0 reduce-scatters it across
// the processes (World::reduce_scatter: spans, size + 1 offsets), and hands this process's span of the range
// to the others. The rest of the range is then undefined.
double hierarchical_reduce_scatter(ThreadCollective &local, const World &world, size_t rank, float *buffer,
                                   size_t begin, size_t end, const size_t *spans, const size_t *to_first,
                                   AllReduceAlgorithm algorithm, double timeout_seconds,
                                   WireType wire = WireType::kF32);

}  // namespace dpt
