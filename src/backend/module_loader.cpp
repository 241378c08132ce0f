#include "backend/module_loader.hpp"

#include <cstddef>
#include <mutex>
#include <vector>

#include "core/platform.hpp"

#ifndef DPTRAIN_HAVE_CUDA_MODULE
#define DPTRAIN_HAVE_CUDA_MODULE 0
#endif

namespace dpt {

namespace {

std::mutex loader_mutex;
BackendModule loaded;  // set once, on the first success

// Opens path and checks its interface; fills m.api, or m.reason.
void open_module(const std::string &path, BackendModule &m) {
  std::string error;
  void *library = platform::library_open(path, error);
  if (library == nullptr) {
    // A missing dependency reads "libcudnn.so.9: cannot open shared object file: ...".
    const bool dependency = error.find("cannot open shared object file") != std::string::npos;
    m.reason =
        std::string(DPT_BACKEND_MODULE_CUDA) + " could not be loaded" +
        (dependency ? " (a CUDA library it needs is missing: CUDA runtime, cuBLAS, cuDNN or NCCL)" : "") +
        ": " + error;
    return;
  }
  auto entry =
      reinterpret_cast<dpt_backend_entry_fn>(platform::library_symbol(library, DPT_BACKEND_ENTRY_CUDA));
  const dpt_backend_v2 *api = entry != nullptr ? entry() : nullptr;
  if (api == nullptr) {
    m.reason = path + " is not a dptrain backend (no " DPT_BACKEND_ENTRY_CUDA ")";
  } else if (api->abi_version != DPT_BACKEND_ABI_VERSION) {
    m.reason = path + " has backend interface version " + std::to_string(api->abi_version) +
               ", this libdptrain needs version " + std::to_string(DPT_BACKEND_ABI_VERSION);
  } else if (api->struct_size < sizeof(dpt_backend_v2)) {
    m.reason = path + " is older than this libdptrain (incomplete backend interface: " +
               std::to_string(api->struct_size) + " bytes, needs " + std::to_string(sizeof(dpt_backend_v2)) +
               ")";
  } else if (const char *missing = missing_backend_function(*api)) {
    m.reason = path + " is incomplete (backend interface member " + missing + " is NULL)";
  } else {
    m.api = api;
    m.path = path;
    return;
  }
  platform::library_close(library);
}

}  // namespace

const char *missing_backend_function(const dpt_backend_v2 &api) {
  // The list must name every function member: then the table is its header plus one pointer per entry.
#define DPT_COUNT_MEMBER(name) +1
  static_assert(
      sizeof(dpt_backend_v2) == offsetof(dpt_backend_v2, device_count) +
                                    (0 DPT_BACKEND_V2_FUNCTIONS(DPT_COUNT_MEMBER)) * sizeof(void (*)(void)),
      "DPT_BACKEND_V2_FUNCTIONS must list every function member of dpt_backend_v2");
#undef DPT_COUNT_MEMBER
#define DPT_CHECK_MEMBER(name) \
  if (api.name == nullptr) return #name;
  DPT_BACKEND_V2_FUNCTIONS(DPT_CHECK_MEMBER)
#undef DPT_CHECK_MEMBER
  return nullptr;
}

ModuleSearchPath module_search_path() {
  ModuleSearchPath s;
  if (auto env = platform::env("DPTRAIN_BACKEND_PATH"); env && !env->empty()) {
    s.origin = "DPTRAIN_BACKEND_PATH";
    size_t start = 0;
    while (start <= env->size()) {
      size_t end = env->find(platform::kPathListSeparator, start);
      if (end == std::string::npos) end = env->size();
      if (end > start) s.directories.push_back(env->substr(start, end - start));
      start = end + 1;
    }
  } else if (auto dir = platform::directory_of_code(reinterpret_cast<const void *>(&load_cuda_backend))) {
    s.origin = "the directory of libdptrain";
    s.directories.push_back(*dir);
  }
  return s;
}

std::string join_directories(const std::vector<std::string> &parts) {
  std::string text;
  for (const std::string &p : parts) {
    if (!text.empty()) text += platform::kPathListSeparator;
    text += p;
  }
  return text;
}

BackendModule load_cuda_backend() {
  std::lock_guard<std::mutex> lock(loader_mutex);
  if (loaded.api != nullptr) return loaded;
  BackendModule m;
  const ModuleSearchPath s = module_search_path();
  if (s.directories.empty()) {
    m.reason = std::string(DPT_BACKEND_MODULE_CUDA) +
               " not found: the directory of libdptrain is unknown and DPTRAIN_BACKEND_PATH is not set";
    return m;
  }
  for (const std::string &dir : s.directories) {
    const std::string path = dir + "/" + DPT_BACKEND_MODULE_CUDA;
    if (!platform::is_regular_file(path)) continue;
    open_module(path, m);
    if (m.api != nullptr) loaded = m;
    return m;  // the first module found decides: a broken one is reported, not skipped
  }
  m.reason = std::string(DPT_BACKEND_MODULE_CUDA) + " not found in " + join_directories(s.directories) +
             " (" + s.origin + ")";
#if defined(_WIN32)
  m.reason +=
      "; the Windows build (mingw-w64) has no CUDA module: it needs MSVC and the CUDA toolkit for Windows";
#else
  if (!DPTRAIN_HAVE_CUDA_MODULE) m.reason += "; this dptrain was built without the CUDA module";
#endif
  return m;
}

}  // namespace dpt
