// libdptrain_mpi.so: MPI for libdptrain, behind the plain C interface of modules/interface/world_interface.h:
// the table of entries and the one exported function. The entries are in the files of their jobs
// (state.hpp lists them).
#include "mpi/state.hpp"

namespace {

using namespace dpt_mpi;

const dpt_world_v1 kWorld = {DPT_WORLD_ABI_VERSION,
                             sizeof(dpt_world_v1),
                             init,
                             all_reduce_sum,
                             broadcast,
                             finalize,
                             library_version,
                             all_to_all,
                             all_gather,
                             reduce_scatter_sum,
                             open_window,
                             expose,
                             withdraw,
                             get,
                             publish,
                             add_channels,
                             get_start,
                             get_finish,
                             send_start,
                             send_finish,
                             receive,
                             add_split_channels,
                             wait_message};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dpt_world_v1 *dptrain_mpi_world_v1(void) {
  return &kWorld;
}
