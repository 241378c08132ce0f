// Finds, opens and checks the loadable CUDA backend module (libdptrain_cuda.so). Nothing here links CUDA.
//
// Search order: each directory of $DPTRAIN_BACKEND_PATH (colon-separated) when it is set and not empty,
// otherwise the directory of libdptrain.so itself. The module is opened only when a caller asks for CUDA
// devices. Once loaded it stays loaded for the life of the process (CUDA libraries must not be unloaded);
// a failure is not remembered, so the next request searches again.
#pragma once

#include <string>
#include <vector>

#include "interface/backend_interface.h"

namespace dpt {

struct BackendModule {
  const dpt_backend_v2 *api = nullptr;  // nullptr when the module is unavailable
  std::string path;                     // the module's file when loaded
  std::string reason;                   // one line: why api is nullptr
};

// Never throws for a missing or broken module: that is a result, not an error.
BackendModule load_cuda_backend();

// The name of the first function member of the table that is NULL, or nullptr when every one is set.
const char *missing_backend_function(const dpt_backend_v2 &api);

// Where loadable modules (CUDA, MPI) are looked for: the directories of $DPTRAIN_BACKEND_PATH when set and
// not empty, else the directory of libdptrain itself; origin names which, for messages.
struct ModuleSearchPath {
  std::vector<std::string> directories;
  std::string origin;
};
ModuleSearchPath module_search_path();
// "a:b:c", for messages.
std::string join_directories(const std::vector<std::string> &directories);

}  // namespace dpt
