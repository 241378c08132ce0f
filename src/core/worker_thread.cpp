#include "core/worker_thread.hpp"

#include "core/platform.hpp"

namespace dpt {

WorkerThread::WorkerThread(int pin_cpu) {
  thread_ = std::thread([this, pin_cpu] {
    if (pin_cpu >= 0) platform::pin_current_thread(pin_cpu);  // a refusal only costs speed
    run();
  });
}

WorkerThread::~WorkerThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void WorkerThread::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_ == slots_.size()) {  // full: unroll the ring into a buffer twice the size
      std::vector<std::function<void()>> bigger(2 * slots_.size());
      for (size_t i = 0; i < queued_; ++i) bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
      slots_ = std::move(bigger);
      head_ = 0;
    }
    slots_[(head_ + queued_) % slots_.size()] = std::move(task);
    ++queued_;
  }
  wake_.notify_one();
}

void WorkerThread::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || queued_ != 0; });
      if (queued_ == 0) return;  // stopping, and nothing left to do
      task = std::move(slots_[head_]);
      head_ = (head_ + 1) % slots_.size();
      --queued_;
    }
    task();
  }
}

}  // namespace dpt
