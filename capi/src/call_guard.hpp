// Overlapping calls on one handle from two threads (the contract allows one thread at a time) are refused
// with DPT_ERROR_BUSY before they touch the object, so every language gets the same answer instead of
// interleaved, corrupted state. Never blocks. The thread inside an exclusive call may call again (a fit
// progress callback reading or checkpointing its trainer); read-only calls may overlap each other.
#pragma once

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
    Scope(CallGuard &guard, bool nested, Mode mode) : guard_(guard), nested_(nested), mode_(mode) {}
    ~Scope() { guard_.leave(nested_, mode_); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

   private:
    CallGuard &guard_;
    bool nested_;
    Mode mode_;
  };

  // Throws DPT_ERROR_BUSY when another thread holds the handle in a conflicting mode.
  Scope enter(Mode mode, const char *what) {
    const std::thread::id me = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(mutex_);
    if (depth_ > 0 && owner_ == me) {  // a call from inside this thread's own call
      ++depth_;
      return Scope(*this, true, mode);
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
    return Scope(*this, false, mode);
  }

 private:
  void leave(bool nested, Mode mode) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (nested || mode == Mode::kExclusive)
      --depth_;
    else
      --readers_;
  }

  std::mutex mutex_;
  std::thread::id owner_;  // the thread in an exclusive call (valid while depth_ > 0)
  size_t depth_ = 0;       // nesting of the owner's calls
  size_t readers_ = 0;     // read-only calls in progress on other threads
};

}  // namespace dpt::capi
