#include "parallel/process_agreement.hpp"

#include <cstring>

#include "core/checksum.hpp"
#include "core/error.hpp"

namespace dpt {

void ProcessAgreement::add(const char *name, uint64_t value) {
  names_.push_back(name);
  values_.push_back(value);
}

void ProcessAgreement::add(const char *name, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  add(name, bits);
}

void ProcessAgreement::add(const char *name, const std::string &text) {
  add(name, fnv1a64(text.data(), text.size()));
}

void ProcessAgreement::check(const World &world, double timeout_seconds) const {
  // First the number of fields (a different dptrain on one process): the broadcast below needs the same
  // size everywhere.
  const size_t n = values_.size();
  double counts[2] = {double(n), double(n) * double(n)};
  world.all_reduce(counts, 2, timeout_seconds);
  const double p = double(world.size());
  DPT_REQUIRE(counts[0] == p * double(n) && counts[1] == p * double(n) * double(n),
              DPT_ERROR_INVALID_ARGUMENT,
              "the processes of the MPI job describe " + what_ +
                  " with different numbers of fields: are they running different dptrain versions?");
  std::vector<uint64_t> reference = values_;
  world.broadcast(reference.data(), n * sizeof(uint64_t), 0, timeout_seconds);
  std::vector<double> differs(n);
  for (size_t i = 0; i < n; ++i) differs[i] = reference[i] != values_[i] ? 1.0 : 0.0;
  world.all_reduce(differs.data(), n, timeout_seconds);  // every process learns every difference
  for (size_t i = 0; i < n; ++i)
    DPT_REQUIRE(differs[i] == 0.0, DPT_ERROR_INVALID_ARGUMENT,
                std::string("the processes of the MPI job disagree on ") + what_ + "'s " + names_[i] + " (" +
                    (reference[i] != values_[i] ? "this process differs from process 0"
                                                : "another process differs from process 0") +
                    "); every process must make the same calls with the same options");
}

}  // namespace dpt
