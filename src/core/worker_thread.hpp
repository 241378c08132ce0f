// One thread that runs submitted tasks in order: a device's worker (a CPU device computes on it; a GPU
// device queues its stream work from it).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dpt {

class WorkerThread {
 public:
  // pin_cpu: the CPU the thread is bound to, or -1 to leave it to the scheduler.
  explicit WorkerThread(int pin_cpu = -1);
  // Runs what is queued, then joins.
  ~WorkerThread();
  WorkerThread(const WorkerThread &) = delete;
  WorkerThread &operator=(const WorkerThread &) = delete;

  // Queues task after the tasks queued before it. Tasks catch their own exceptions.
  void submit(std::function<void()> task);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  // A ring of task slots: no heap allocation per task once it has grown to the peak queue length.
  std::vector<std::function<void()>> slots_ = std::vector<std::function<void()>>(16);
  size_t head_ = 0, queued_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dpt
