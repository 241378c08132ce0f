// Error type of the C++ core: an exception carrying the public status code it maps to.
#pragma once

#include <dptrain/status.h>

#include <stdexcept>
#include <string>

namespace dpt {

class Error : public std::runtime_error {
 public:
  Error(dpt_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
  dpt_status status() const { return status_; }

 private:
  dpt_status status_;
};

[[noreturn]] inline void throw_error(dpt_status status, const std::string &message) {
  throw Error(status, message);
}

}  // namespace dpt

// Throws unless condition holds. A macro so that the message (often built with std::to_string) is only
// computed on failure: checks on the training path must not allocate.
#define DPT_REQUIRE(condition, status, message)                \
  do {                                                         \
    if (!(condition)) ::dpt::throw_error((status), (message)); \
  } while (0)
