// Across the processes of an MPI job, every process must make the same sequence of collectives, or the
// job hangs or fails deep inside MPI (a message truncated, a count mismatch). What shapes that sequence
// (the model, the trainer's and fit's options, the data set sizes) is checked once, up front: each process
// lists the fields, process 0's list is broadcast, and a difference is DPT_ERROR_INVALID_ARGUMENT on every
// process, naming the first field that differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/world.hpp"

namespace dpt {

class ProcessAgreement {
 public:
  // what: the call being agreed on, for the message ("the trainer", "fit").
  explicit ProcessAgreement(std::string what) : what_(std::move(what)) {}

  void add(const char *name, uint64_t value);
  void add(const char *name, double value);             // compared bit for bit
  void add(const char *name, const std::string &text);  // compared by a 64-bit hash

  // Collective: compares with process 0. Throws DPT_ERROR_INVALID_ARGUMENT (every process, the same
  // field), or the world's TIMEOUT / COMMUNICATION errors.
  void check(const World &world, double timeout_seconds) const;

 private:
  std::string what_;
  std::vector<const char *> names_;
  std::vector<uint64_t> values_;
};

}  // namespace dpt
