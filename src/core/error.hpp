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

inline void require(bool condition, dpt_status status, const std::string &message) {
  if (!condition) throw_error(status, message);
}

}  // namespace dpt
