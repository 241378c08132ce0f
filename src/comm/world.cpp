#include "comm/world.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "backend/module_loader.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

namespace {

std::mutex world_mutex;
World *the_world = nullptr;
// World::pooled_channel's, per World (the whole World's under color -1, a split World's under its color),
// and split's Worlds per block size, under world_mutex; leaked as the channels are.
std::map<long, std::deque<World *>> pools;
std::map<size_t, World *> splits;
long next_color = 0;  // split's colors: one per block size and block, the same on every process
bool finalized = false;

// Finds and opens the module; returns its interface, or nullptr with the reason.
const dpt_world_v1 *load_module(std::string &reason) {
  const ModuleSearchPath s = module_search_path();
  for (const std::string &dir : s.directories) {
    const std::string path = dir + "/" + DPT_WORLD_MODULE_MPI;
    if (!platform::is_regular_file(path)) continue;
    std::string error;
    void *library = platform::library_open(path, error);
    if (library == nullptr) {
      reason = std::string(DPT_WORLD_MODULE_MPI) + " could not be loaded (is Open MPI installed?): " + error;
      return nullptr;
    }
    auto entry = reinterpret_cast<dpt_world_entry_fn>(platform::library_symbol(library, DPT_WORLD_ENTRY_MPI));
    const dpt_world_v1 *api = entry != nullptr ? entry() : nullptr;
    if (api == nullptr || api->abi_version != DPT_WORLD_ABI_VERSION ||
        api->struct_size < sizeof(dpt_world_v1)) {
      reason = path + " is not an MPI module of this libdptrain (interface version " +
               std::to_string(DPT_WORLD_ABI_VERSION) + " expected)";
      platform::library_close(library);
      return nullptr;
    }
    return api;  // stays loaded: MPI must not be unloaded
  }
  reason = std::string(DPT_WORLD_MODULE_MPI) + " not found in " + join_directories(s.directories) + " (" +
           s.origin + "); this dptrain was built without MPI, or the module was not installed";
  return nullptr;
}

}  // namespace

World &World::get() {
  std::lock_guard<std::mutex> lock(world_mutex);
  if (the_world != nullptr) return *the_world;
  DPT_REQUIRE(!finalized, DPT_ERROR_INVALID_STATE, "MPI was finalized in this process and cannot restart");
  std::string reason;
  const dpt_world_v1 *api = load_module(reason);
  DPT_REQUIRE(api != nullptr, DPT_ERROR_UNSUPPORTED, "no MPI: " + reason);
  char error[512] = "";
  int rank = 0, size = 1;
  DPT_REQUIRE(api->init(&rank, &size, error, sizeof error) == DPT_WORLD_OK, DPT_ERROR_COMMUNICATION, error);
  // One World per channel; they live until the process ends (finalize() keeps them, marked unusable).
  World *channels[DPT_WORLD_CHANNELS];
  for (int c = 0; c < DPT_WORLD_CHANNELS; ++c) {
    World *world = channels[c] = new World();
    world->api_ = api;
    world->channel_ = c;
    world->rank_ = size_t(rank);
    world->size_ = size_t(size);
    world->version_ = api->library_version();
  }
  for (World *world : channels) std::copy(channels, channels + DPT_WORLD_CHANNELS, world->channels_);
  World *world = channels[DPT_WORLD_CHANNEL_MAIN];
  the_world = world;
  // MPI must be finalized before exit, or the launcher reports the process as failed; applications
  // that do not call dpt_world_finalize() get it here.
  std::atexit([] {
    try {
      World::finalize();
    } catch (...) {  // nothing can be reported at exit; the launcher sees the process end either way
    }
  });
  return *world;
}

void World::finalize() {
  std::lock_guard<std::mutex> lock(world_mutex);
  if (the_world == nullptr || finalized) return;
  char error[512] = "";
  finalized = true;
  const int result = the_world->api_->finalize(error, sizeof error);
  the_world = nullptr;  // the object is leaked on purpose: a racing reader must not see freed memory
  DPT_REQUIRE(result == DPT_WORLD_OK, DPT_ERROR_COMMUNICATION, error);
}

void World::check(int result, const char *error) const {
  if (result == DPT_WORLD_OK) return;
  throw_error(
      result == DPT_WORLD_TIMEOUT ? DPT_ERROR_TIMEOUT : DPT_ERROR_COMMUNICATION,
      std::string("process ") + std::to_string(rank_) + " of " + std::to_string(size_) + ": " + error);
}

void World::all_reduce(float *buffer, size_t count, double timeout_seconds, WireType wire) const {
  if (wire != WireType::kF32) {
    // In pieces, so that MPI's int counts and the staging stay bounded; each piece is a whole all-reduce.
    constexpr size_t kPiece = size_t(1) << 24;
    for (size_t done = 0; done < count; done += kPiece)
      all_reduce_16(buffer + done, std::min(kPiece, count - done), timeout_seconds, wire);
    return;
  }
  char error[512] = "";
  check(api_->all_reduce_sum(channel_, buffer, count, 0, timeout_seconds, error, sizeof error), error);
}

void World::all_reduce_16(float *buffer, size_t count, double timeout_seconds, WireType wire) const {
  const size_t chunk = (count + size_ - 1) / size_;  // process p owns [p chunk, (p + 1) chunk)
  send_.assign(chunk * size_, 0);
  received_.resize(chunk * size_);
  gathered_.resize(chunk * size_);
  to_wire16(buffer, send_.data(), count, wire);
  char error[512] = "";
  check(api_->all_to_all(channel_, send_.data(), received_.data(), chunk * sizeof(uint16_t), timeout_seconds,
                         error, sizeof error),
        error);
  // received_[q chunk + i]: process q's element i of this process's chunk, summed in process order into
  // send_ (no longer needed).
  sum_wire16(received_.data(), size_, chunk, send_.data(), chunk, wire);
  check(api_->all_gather(channel_, send_.data(), gathered_.data(), chunk * sizeof(uint16_t), timeout_seconds,
                         error, sizeof error),
        error);
  from_wire16(gathered_.data(), buffer, count, wire);
}

void World::all_reduce(double *buffer, size_t count, double timeout_seconds) const {
  char error[512] = "";
  check(api_->all_reduce_sum(channel_, buffer, count, 1, timeout_seconds, error, sizeof error), error);
}

void World::reduce_scatter(float *range, size_t begin, size_t end, const size_t *spans,
                           double timeout_seconds, WireType wire) const {
  if (end <= begin) return;
  if (wire != WireType::kF32) {
    all_reduce(range, end - begin, timeout_seconds, wire);
    return;
  }
  counts_.resize(size_);
  for (size_t p = 0; p < size_; ++p)
    counts_[p] = std::clamp(spans[p + 1], begin, end) - std::clamp(spans[p], begin, end);
  char error[512] = "";
  check(api_->reduce_scatter_sum(channel_, range, counts_.data(), timeout_seconds, error, sizeof error),
        error);
  // MPI leaves this process's part at the start of the range: it moves to its place.
  const size_t at = std::clamp(spans[rank_], begin, end);
  if (at != begin && counts_[rank_] != 0)
    std::memmove(range + (at - begin), range, counts_[rank_] * sizeof(float));
}

void World::broadcast(void *buffer, size_t bytes, size_t root, double timeout_seconds) const {
  char error[512] = "";
  check(api_->broadcast(channel_, buffer, bytes, int(root), timeout_seconds, error, sizeof error), error);
}

void World::open_window() const {
  char error[512] = "";
  check(api_->open_window(error, sizeof error), error);
}

uint64_t World::expose(void *base, size_t bytes) const {
  char error[512] = "";
  uint64_t address = 0;
  check(api_->expose(base, bytes, &address, error, sizeof error), error);
  return address;
}

void World::withdraw(const std::vector<void *> &bases, double timeout_seconds) const {
  char error[512] = "";
  check(api_->withdraw(bases.data(), bases.size(), timeout_seconds, error, sizeof error), error);
}

void World::get(void *destination, size_t bytes, size_t process, uint64_t address,
                double timeout_seconds) const {
  char error[512] = "";
  check(api_->get(destination, bytes, int(process), address, timeout_seconds, error, sizeof error), error);
}

void *World::start_get(void *destination, size_t bytes, size_t process, uint64_t address) const {
  char error[512] = "";
  void *pending = nullptr;
  check(api_->get_start(destination, bytes, int(process), address, &pending, error, sizeof error), error);
  return pending;
}

void World::finish_get(void *pending, double timeout_seconds) const {
  char error[512] = "";
  check(api_->get_finish(pending, timeout_seconds, error, sizeof error), error);
}

void *World::start_send(const void *buffer, size_t bytes, size_t process, int tag) const {
  char error[512] = "";
  void *pending = nullptr;
  check(api_->send_start(channel_, buffer, bytes, int(process), tag, &pending, error, sizeof error), error);
  return pending;
}

void World::finish_send(void *pending, double timeout_seconds, bool abandon) const {
  char error[512] = "";
  check(api_->send_finish(pending, timeout_seconds, abandon ? 1 : 0, error, sizeof error), error);
}

void World::receive(void *buffer, size_t bytes, size_t process, int tag, double timeout_seconds) const {
  char error[512] = "";
  check(api_->receive(channel_, buffer, bytes, int(process), tag, timeout_seconds, error, sizeof error),
        error);
}

void World::wait_message(size_t process, int tag, double timeout_seconds) const {
  char error[512] = "";
  check(api_->wait_message(channel_, int(process), tag, timeout_seconds, error, sizeof error), error);
}

void World::publish(double timeout_seconds) const {
  char error[512] = "";
  check(api_->publish(channel_, timeout_seconds, error, sizeof error), error);
}

void World::reserve_pooled_channels(size_t count) const {
  std::lock_guard<std::mutex> lock(world_mutex);
  std::deque<World *> &pooled = pools[color_];
  const size_t have = pooled.size();
  if (have >= count) return;
  char error[512] = "";
  int first = 0, rank = 0, size = 0;
  check(color_ < 0 ? api_->add_channels(int(count - have), &first, error, sizeof error)
                   : api_->add_split_channels(int(color_), int(count - have), &first, &rank, &size, error,
                                              sizeof error),
        error);
  for (size_t k = have; k < count; ++k) {
    World *world = new World(*this);
    world->channel_ = first + int(k - have);
    pooled.push_back(world);
  }
}

const World &World::pooled_channel(size_t k) const {
  std::lock_guard<std::mutex> lock(world_mutex);
  const std::deque<World *> &pooled = pools[color_];
  DPT_REQUIRE(k < pooled.size(), DPT_ERROR_INVALID_STATE,
              "no pooled MPI channel " + std::to_string(k) + " (reserve_pooled_channels first)");
  return *pooled[k];
}

const World &World::split(size_t block) const {
  std::lock_guard<std::mutex> lock(world_mutex);
  DPT_REQUIRE(color_ < 0, DPT_ERROR_INVALID_STATE, "a split World cannot be split again");
  DPT_REQUIRE(block > 0 && size_ % block == 0, DPT_ERROR_INVALID_ARGUMENT,
              "cannot split " + std::to_string(size_) + " processes into blocks of " + std::to_string(block));
  if (World *made = splits[block]) return *made;
  // Every process makes the same splits in the same order, so the colors agree: this split's blocks take
  // the next size_ / block colors (the pools of channels are kept per color).
  const long color = next_color + long(rank_ / block);
  next_color += long(size_ / block);
  char error[512] = "";
  int first = 0, rank = 0, size = 0;
  check(api_->add_split_channels(int(color), DPT_WORLD_CHANNELS, &first, &rank, &size, error, sizeof error),
        error);
  World *channels[DPT_WORLD_CHANNELS];
  for (int c = 0; c < DPT_WORLD_CHANNELS; ++c) {
    World *world = channels[c] = new World(*this);
    world->channel_ = first + c;
    world->color_ = color;
    world->rank_ = size_t(rank);
    world->size_ = size_t(size);
  }
  for (World *world : channels) std::copy(channels, channels + DPT_WORLD_CHANNELS, world->channels_);
  splits[block] = channels[DPT_WORLD_CHANNEL_MAIN];
  return *channels[DPT_WORLD_CHANNEL_MAIN];
}

}  // namespace dpt
