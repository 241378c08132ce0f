// Copies beside the compute (copy_device_ahead, copy_join_ahead): stand in for a copy on a copy stream. The
// call runs the work queued on the context before it, then takes a copy of the source (the earliest a GPU
// may read it) and fills the destination with 0xFF bytes (NaN: on a GPU it holds anything until the
// join). The join's place in the queue (the latest a GPU may finish the copy) checks that nobody wrote the
// source or the destination meanwhile (DPT_BACKEND_ERROR: on a GPU a race) and only then writes the
// values. So a core that reads the destination before the join sees NaN, and one that writes either
// buffer in between is told so.
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "sim.hpp"

namespace dpt_sim {

namespace {

constexpr unsigned char kInFlight = 0xFF;

bool still_in_flight(const Span &to) {
  return std::all_of(to.host, to.host + to.bytes,
                     [](char b) { return static_cast<unsigned char>(b) == kInFlight; });
}

}  // namespace

int copy_device_ahead(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                      size_t error_size) {
  const Error e{error, error_size};
  constexpr const char *kCall = "copy_device_ahead";
  return with_context(ctx, e, kCall, [&](dpt_backend_context &c) {
    if (bytes == 0) return 0;
    Span to, from;
    if (const int rc = resolve(c, kCall, "destination", dst, bytes, 1, Where::kContextDevice, false, to, e))
      return rc;
    // The source may be on another GPU (a peer copy).
    if (const int rc = resolve(c, kCall, "source", src, bytes, 1, Where::kAnyDevice, false, from, e))
      return rc;
    auto copy = std::make_shared<AheadCopy>();
    copy->to = to;
    copy->from = from;
    // The work queued before runs now, and the copy at once after it: the earliest a GPU may run it.
    char pending[512];
    if (drain_and_peek(c, Error{pending, sizeof pending}) == 0) {  // (a failed stream runs nothing)
      copy->values.assign(from.host, from.host + from.bytes);
      std::memset(to.host, kInFlight, to.bytes);
      copy->taken = true;
    }
    c.ahead.push_back(copy);
    return 0;
  });
}

int copy_join_ahead(dpt_backend_context *ctx, char *error, size_t error_size) {
  const Error e{error, error_size};
  constexpr const char *kCall = "copy_join_ahead";
  return with_context(ctx, e, kCall, [&](dpt_backend_context &c) {
    if (c.ahead.empty()) return 0;
    std::vector<std::shared_ptr<AheadCopy>> copies;
    copies.swap(c.ahead);
    std::vector<Span> spans;
    for (const auto &copy : copies) spans.push_back(copy->to), spans.push_back(copy->from);
    const int ordinal = c.ordinal;
    return enqueue_checked(c, kCall, std::move(spans), [copies, ordinal](const Error &err) {
      for (const auto &copy : copies) {  // every copy checked before any lands (two may share a destination)
        if (!copy->taken) continue;
        const char *written = nullptr;
        if (std::memcmp(copy->from.host, copy->values.data(), copy->from.bytes) != 0)
          written = "source";
        else if (!still_in_flight(copy->to))
          written = "destination";
        if (written != nullptr)
          return report(err, DPT_BACKEND_ERROR,
                        "cuda:%d: copy_join_ahead: the %s %p of a copy_device_ahead was written before the "
                        "join (a race on a GPU)",
                        ordinal, written, written[0] == 's' ? copy->from.address : copy->to.address);
      }
      for (const auto &copy : copies)
        if (copy->taken) std::memcpy(copy->to.host, copy->values.data(), copy->to.bytes);
      return 0;
    });
  });
}

}  // namespace dpt_sim
