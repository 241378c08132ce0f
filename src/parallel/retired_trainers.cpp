#include "parallel/retired_trainers.hpp"

#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace dpt {

namespace {

using Parked = std::vector<std::unique_ptr<Trainer>>;

std::mutex parked_mutex;
// Built in static storage (no allocation that could fail) and never destroyed: at process exit a parked
// trainer's task may still be running.
Parked &parked() {
  alignas(Parked) static unsigned char storage[sizeof(Parked)];
  static Parked *list = new (storage) Parked();
  return *list;
}

}  // namespace

size_t sweep_retired_trainers() noexcept {
  for (;;) {
    std::unique_ptr<Trainer> ready;
    {
      std::lock_guard<std::mutex> lock(parked_mutex);
      Parked &list = parked();
      for (size_t i = 0; i < list.size() && ready == nullptr; ++i) {
        if (list[i]->tasks_outstanding()) continue;
        ready = std::move(list[i]);
        list.erase(list.begin() + std::ptrdiff_t(i));
      }
      if (ready == nullptr) return list.size();
    }
    ready.reset();  // outside the lock: destroying a trainer may join the threads of its context
  }
}

void retire_trainer(std::unique_ptr<Trainer> trainer) noexcept {
  if (trainer != nullptr && trainer->tasks_outstanding()) {
    try {
      std::lock_guard<std::mutex> lock(parked_mutex);
      parked().push_back(std::move(trainer));
    } catch (...) {
      (void)trainer.release();  // no memory to park it: leaking it is the only safe choice
    }
  }
  trainer.reset();
  sweep_retired_trainers();
}

}  // namespace dpt
