// The MPI world: rank and size, finalization (world.h).
#include <dptrain/world.h>

#include "api_support.hpp"
#include "comm/world.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

dpt_status dpt_world_get(size_t *rank, size_t *size) {
  return guarded(__func__, [&] {
    require_not_null(rank, "rank");
    require_not_null(size, "size");
    const dpt::World &world = dpt::World::get();
    *rank = world.rank();
    *size = world.size();
  });
}

dpt_status dpt_world_finalize(void) {
  return guarded(__func__, [&] { dpt::World::finalize(); });
}

}  // extern "C"
