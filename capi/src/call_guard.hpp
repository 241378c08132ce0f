// Overlapping calls on one handle from two threads (the contract allows one thread at a time) are refused
// with DPT_ERROR_BUSY before they touch the object, so every language gets the same answer instead of
// interleaved, corrupted state. Never blocks a refused call. Read-only calls may overlap each other; the
// thread inside an exclusive call may call again (one entry point calling another). While an exclusive
// call waits in a user callback (dpt_trainer_fit's progress), the handle is free for one call at a time
// from any thread: the callback's own calls, or those of a thread it hands work to (Go runs callbacks on
// a goroutine of their own).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace dpt::capi {

class CallGuard {
 public:
  enum class Mode { kShared, kExclusive };

  // Held for the duration of one call.
  class [[nodiscard]] Scope {
   public:
    Scope(CallGuard &guard, Mode mode) : guard_(guard), mode_(mode) {}
    ~Scope() { guard_.leave(mode_); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

   private:
    CallGuard &guard_;
    Mode mode_;
  };

  // Held by the exclusive call's thread while it waits in a callback. Its end waits for calls made in the
  // meantime to return, then the exclusive call goes on.
  class [[nodiscard]] Pause {
   public:
    explicit Pause(CallGuard &guard) : guard_(guard) {
      std::lock_guard<std::mutex> lock(guard_.mutex_);
      owner_ = guard_.owner_;
      depth_ = guard_.depth_;
      guard_.depth_ = 0;
    }
    ~Pause() {
      std::unique_lock<std::mutex> lock(guard_.mutex_);
      guard_.idle_.wait(lock, [&] { return guard_.depth_ == 0 && guard_.readers_ == 0; });
      guard_.owner_ = owner_;
      guard_.depth_ = depth_;
    }
    Pause(const Pause &) = delete;
    Pause &operator=(const Pause &) = delete;

   private:
    CallGuard &guard_;
    std::thread::id owner_;
    size_t depth_ = 0;
  };

  // Throws DPT_ERROR_BUSY when another thread holds the handle in a conflicting mode.
  Scope enter(Mode mode, const char *what) {
    const std::thread::id me = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(mutex_);
    if (depth_ > 0 && owner_ == me) {  // a call made from inside this thread's own exclusive call
      ++depth_;
      return Scope(*this, Mode::kExclusive);
    }
    if (depth_ > 0 || (mode == Mode::kExclusive && readers_ > 0))
      throw_error(DPT_ERROR_BUSY,
                  std::string("the ") + what +
                      " is in a call on another thread (one thread at a time); nothing was done");
    if (mode == Mode::kShared) {
      ++readers_;
    } else {
      owner_ = me;
      depth_ = 1;
    }
    return Scope(*this, mode);
  }

 private:
  void leave(Mode mode) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (mode == Mode::kExclusive)
      --depth_;
    else
      --readers_;
    if (depth_ == 0 && readers_ == 0) idle_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable idle_;
  std::thread::id owner_;  // the thread in an exclusive call (valid while depth_ > 0)
  size_t depth_ = 0;       // nesting of the owner's calls
  size_t readers_ = 0;     // read-only calls in progress
};

}  // namespace dpt::capi
