// Support code for the SWIG bindings: turns a failed dpt_status into a C++ exception that each language's
// %exception handler maps to its own error type, and adapts the C progress callback to a director class.
// Uses the public C API only (bindings never see the C++ core).
#pragma once

#include <dptrain/dptrain.h>

#include <cstring>
#include <exception>
#include <string>
#include <utility>

namespace dptrain_binding {

// A failed call: the status, its category (status rounded down to 1000s) and the library's message.
class Error : public std::exception {
 public:
  Error(dpt_status status, std::string message) : status_(status), message_(std::move(message)) {}
  dpt_status status() const { return status_; }
  int category() const { return dpt_status_category(status_); }
  const char *what() const noexcept override { return message_.c_str(); }

 private:
  dpt_status status_;
  std::string message_;
};

inline void check(dpt_status status) {
  if (status != DPT_OK) throw Error(status, dpt_last_error_message());
}

// A copy of text (new[]) for a text field of an options struct that its proxy owns (TrainerOptions'
// pipeline_cuts): freed by the next set and by the proxy's destructor; NULL stays NULL.
inline char *copyText(const char *text) {
  if (text == nullptr) return nullptr;
  const size_t size = std::strlen(text) + 1;
  return static_cast<char *>(std::memcpy(new char[size], text, size));
}

// Called by Trainer.fit with each progress report; return true to stop training. Languages subclass it
// (SWIG directors). It runs on the thread that called fit.
class ProgressListener {
 public:
  virtual ~ProgressListener() {}
  virtual bool onProgress(const dpt_progress &progress) = 0;
};

// The C callback behind fit: an exception thrown by the listener (a director exception carrying a Java,
// C# or Go error) is kept, training stops, and fit rethrows it once the library has returned.
struct ProgressBridge {
  ProgressListener *listener;
  std::exception_ptr error;

  static int call(const dpt_progress *progress, void *user_data) {
    ProgressBridge *self = static_cast<ProgressBridge *>(user_data);
    try {
      return self->listener->onProgress(*progress) ? 1 : 0;
    } catch (...) {
      self->error = std::current_exception();
      return 1;
    }
  }
};

// The training and validation parts dpt_dataset_load_text makes in one pass over a text, handed to the
// language one at a time: takeTrain / takeValidation pass the ownership on (a second take gives NULL), and
// the destructor destroys what was not taken, so that no path (an exception between the two takes
// included) leaks a part. Dataset.loadText of each language wraps it.
class TextParts {
 public:
  TextParts(const char *path, size_t context_length, double validation_fraction) {
    check(dpt_dataset_load_text(&train_, &validation_, path, context_length, validation_fraction));
  }
  ~TextParts() {
    dpt_dataset_destroy(train_);
    dpt_dataset_destroy(validation_);
  }
  TextParts(const TextParts &) = delete;
  TextParts &operator=(const TextParts &) = delete;
  dpt_dataset *takeTrain() { return std::exchange(train_, nullptr); }
  dpt_dataset *takeValidation() { return std::exchange(validation_, nullptr); }

 private:
  dpt_dataset *train_ = nullptr;
  dpt_dataset *validation_ = nullptr;
};

}  // namespace dptrain_binding
