// The exception barrier and argument checks shared by every extern "C" entry point.
#pragma once

#include <dptrain/dptrain.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>

#include "core/error.hpp"

namespace dpt::capi {

// Records "function: <prefix><message>" as the thread's last error, on one line, truncated to 1023 bytes.
// Never allocates, so it is safe while handling std::bad_alloc.
void set_last_error(const char *function, const char *prefix, const char *message) noexcept;

// Runs body; turns every exception into a status and a one-line message. Nothing escapes into C.
template <typename Body>
dpt_status guarded(const char *function, Body &&body) noexcept {
  try {
    body();
    return DPT_OK;
  } catch (const Error &e) {
    set_last_error(function, "", e.what());
    return e.status();
  } catch (const std::bad_alloc &) {
    set_last_error(function, "", "out of host memory");
    return DPT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    set_last_error(function, "internal error: ", e.what());
    return DPT_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(function, "internal error: ", "unknown exception");
    return DPT_ERROR_INTERNAL;
  }
}

inline void require_not_null(const void *p, const char *name) {
  DPT_REQUIRE(p != nullptr, DPT_ERROR_NULL_POINTER, std::string(name) + " is NULL");  // built on failure only
}

// a * b, or DPT_ERROR_SIZE_MISMATCH-free overflow detection: throws INVALID_ARGUMENT when it overflows.
inline size_t checked_mul(size_t a, size_t b, const char *what) {
  size_t r;
  DPT_REQUIRE(!__builtin_mul_overflow(a, b, &r), DPT_ERROR_INVALID_ARGUMENT,
              std::string(what) + " overflows size_t");
  return r;
}

// A caller's enum value, checked against the known values before it is used as the enum type: reading an
// out-of-range value through the enum type would be undefined behaviour, so the raw int is copied out first.
template <typename E>
E checked_enum(const E &value, std::initializer_list<int> known, const char *what) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized on every supported ABI");
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  for (int k : known)
    if (raw == k) return static_cast<E>(raw);
  throw_error(DPT_ERROR_INVALID_ARGUMENT, std::string("unknown ") + what + " " + std::to_string(raw));
}

// The size of each versioned struct as of 0.1, the first release: the smallest struct_size ever accepted.
// Fields are only appended, so a caller built against 0.1 keeps working with every later 0.x library.
// Pinned by the last field of 0.1; never change these when appending.
template <typename T>
constexpr size_t struct_size_v0_1();
#define DPT_PIN_STRUCT(T, last)                 \
  template <>                                   \
  constexpr size_t struct_size_v0_1<T>() {      \
    return offsetof(T, last) + sizeof(T::last); \
  }
DPT_PIN_STRUCT(dpt_context_options, cpu_memory_limit)
DPT_PIN_STRUCT(dpt_device_info, memory_in_use)
DPT_PIN_STRUCT(dpt_trainer_options, init_std)
DPT_PIN_STRUCT(dpt_optimizer_options, clip_norm)
DPT_PIN_STRUCT(dpt_fit_options, eval_batch_size)
DPT_PIN_STRUCT(dpt_step_result, total_seconds)
DPT_PIN_STRUCT(dpt_eval_result, seconds)
DPT_PIN_STRUCT(dpt_fit_result, optimizer_steps)
// Structs added after 0.1: their first layout is their smallest.
DPT_PIN_STRUCT(dpt_backend_info, versions)
DPT_PIN_STRUCT(dpt_replica_memory, total)
DPT_PIN_STRUCT(dpt_replica_times, bus_bandwidth)
#undef DPT_PIN_STRUCT

template <typename T>
void check_struct_size(size_t struct_size, const char *name) {
  DPT_REQUIRE(struct_size >= struct_size_v0_1<T>(), DPT_ERROR_INVALID_ARGUMENT,
              std::string(name) + "->struct_size is " + std::to_string(struct_size) + ", expected at least " +
                  std::to_string(struct_size_v0_1<T>()) + " (use the _init function or sizeof)");
}

// Options struct: NULL = defaults. An older caller's smaller struct fills the fields it has and leaves the
// newer ones at their defaults; a newer caller's larger struct is read up to the fields known here.
template <typename T>
T read_options(const T *in, const T &defaults, const char *name) {
  if (in == nullptr) return defaults;
  check_struct_size<T>(in->struct_size, name);
  T out = defaults;
  std::memcpy(&out, in, std::min(in->struct_size, sizeof(T)));
  return out;
}

// Result struct filled by the library: checked before any work is done.
template <typename T>
void check_result(const T *out, const char *name) {
  if (out != nullptr) check_struct_size<T>(out->struct_size, name);
}

// Writes the fields the caller's struct has room for; struct_size keeps the caller's value.
template <typename T>
void write_result(T *out, T value) {
  if (out == nullptr) return;
  value.struct_size = out->struct_size;
  std::memcpy(out, &value, std::min(out->struct_size, sizeof(T)));
}

// Copies text and its NUL into buffer (a model's description and JSON, a pipeline's cuts):
// BUFFER_TOO_SMALL, with *needed set, when it does not fit.
inline void copy_text(const std::string &text, char *buffer, size_t capacity, size_t *needed,
                      const char *what) {
  DPT_REQUIRE(buffer != nullptr || capacity == 0, DPT_ERROR_NULL_POINTER,
              "buffer is NULL but capacity is not 0");
  if (needed != nullptr) *needed = text.size() + 1;
  DPT_REQUIRE(capacity >= text.size() + 1, DPT_ERROR_BUFFER_TOO_SMALL,
              std::string(what) + " needs " + std::to_string(text.size() + 1) + " bytes, capacity is " +
                  std::to_string(capacity));
  std::memcpy(buffer, text.c_str(), text.size() + 1);
}

}  // namespace dpt::capi
