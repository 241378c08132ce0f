#include "backend/cuda/discovery.hpp"

#include "backend/cuda/device.hpp"
#include "backend/module_loader.hpp"

namespace dpt {

CudaDiscovery discover_cuda_devices() {
  CudaDiscovery d;
  BackendReport &r = d.report;
  r.requested = true;
  const BackendModule module = load_cuda_backend();
  if (module.api == nullptr) {
    r.reason = module.reason;
    return d;
  }
  const dpt_backend_v2 &api = *module.api;
  r.loaded = true;
  r.module_path = module.path;
  dpt_backend_versions versions;
  api.versions(&versions);
  r.driver_version = versions.driver_version;
  r.runtime_version = versions.runtime_version;
  r.versions = versions.text;

  char error[512] = "";
  int count = 0;
  if (api.device_count(&count, error, sizeof error) != 0 || count <= 0) {
    r.reason = error[0] != '\0' ? error : "no CUDA GPU found";
    return d;
  }
  std::vector<int> ordinals;
  for (int i = 0; i < count; ++i) {
    dpt_backend_device_props props;
    if (api.device_props(i, &props, error, sizeof error) !=
        0) {  // e.g. a GPU in a bad state: skip it, say why
      r.reason += (r.reason.empty() ? "" : "; ") + std::string("skipped: ") + error;
      continue;
    }
    d.devices.push_back(std::make_unique<CudaDevice>(api, i, props));
    ordinals.push_back(i);
  }
  r.device_count = d.devices.size();
  d.peer_access.assign(ordinals.size(), std::vector<bool>(ordinals.size(), false));
  for (size_t i = 0; i < ordinals.size(); ++i) {
    for (size_t j = 0; j < ordinals.size(); ++j) {
      int can = 0;
      if (i != j && api.can_access_peer(ordinals[i], ordinals[j], &can, error, sizeof error) == 0)
        d.peer_access[i][j] = can != 0;
    }
  }
  return d;
}

}  // namespace dpt
