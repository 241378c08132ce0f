/* go.i: the Go side of dptrain.i (included by it when SWIG runs with -go -cgo -intgosize 64 -c++).
 *
 * The generated package (bindings/go/internal/swig, committed so that the module builds with a plain
 * `go build`; ctest go_swig_up_to_date fails when it differs from what SWIG makes of this interface now,
 * `cmake --build build --target go_swig_update` refreshes it) is the raw layer; the idiomatic package
 * dptrain (bindings/go) wraps it. Nothing here panics:
 *   - a failed call leaves its status and message in a per-thread slot instead of panicking; the Go
 *     layer reads it with TakeErrorStatus/TakeErrorMessage right after the call, on the same OS thread
 *     (runtime.LockOSThread), and returns an *Error. So no C++ catch frame is ever abandoned by a Go
 *     panic unwinding through C.
 *   - a progress listener never throws: the Go director method runs the user's callback on its own
 *     goroutine and turns a panic (or runtime.Goexit) there into "stop" plus an error that Fit returns,
 *     so ProgressBridge's rethrow path is never taken from Go.
 *   - slices cross without copies: the (pointer, count) patterns take the Go slice's array and length.
 * A copy of dptrain_binding.hpp lies next to the generated dptrain_wrap.cxx, so the package is
 * self-contained apart from libdptrain, which cgo finds through pkg-config (dptrain.pc).
 * Names: SWIG's Go module exports every name by capitalising it (deviceCount -> DeviceCount). */

%{
#include <new>
#include <string>

namespace dptrain_go {
// The error of the most recent failed wrapped call on this thread (status 0 = none).
struct LastError {
  int status = 0;
  std::string message;
};
inline LastError &last_error() {
  static thread_local LastError e;
  return e;
}
inline void set_error(int status, const char *message) noexcept {
  try {
    LastError &e = last_error();
    e.status = status;
    e.message = message;
  } catch (...) {  // out of memory while keeping the message: keep the status at least
    last_error().status = status;
  }
}
// Records the exception being handled (call only inside a catch block).
inline void record_current_exception() noexcept {
  try {
    throw;
  } catch (const dptrain_binding::Error &e) {
    set_error(static_cast<int>(e.status()), e.what());
  } catch (const std::bad_alloc &) {
    set_error(DPT_ERROR_OUT_OF_MEMORY, "out of memory in the Go binding");
  } catch (const std::exception &e) {
    set_error(DPT_ERROR_INTERNAL, e.what());
  } catch (...) {
    set_error(DPT_ERROR_INTERNAL, "unknown C++ exception in the Go binding");
  }
}

// The zero value of a wrapper's return type; `return f();` with f returning void is valid C++.
template <class F>
struct ZeroResult;
template <class R, class... A>
struct ZeroResult<R (*)(A...)> {
  static R get() { return R{}; }
};
template <class... A>
struct ZeroResult<void (*)(A...)> {
  static void get() {}
};
// A std::string result crosses as a malloc'ed _gostring_ that the generated Go code copies and frees
// (swigCopyString). Its pointer must not be NULL, also for the empty result of a failed call: slicing a nil
// array pointer panics in Go (which the Go layer would report as StatusInternal, losing the real error).
template <class... A>
struct ZeroResult<_gostring_ (*)(A...)> {
  static _gostring_ get() {
    _gostring_ s;
    s.p = static_cast<char *>(malloc(1));
    s.n = 0;
    return s;
  }
};
}  // namespace dptrain_go
%}

/* Every wrapped call: a thrown error is recorded, and the wrapper returns at once with a zero value
 * of its own return type (void included), found from the wrapper function itself ($wrapname). */
%exception %{
  try {
    $action
  } catch (...) {
    dptrain_go::record_current_exception();
    return dptrain_go::ZeroResult<decltype(&$wrapname)>::get();
  }
%}

/* ---- (pointer, count) patterns: the slice's own memory, no copy ------------------------------------ */

%define DPT_GO_SLICE(CTYPE, GOTYPE, PTR, COUNT)
%typemap(gotype) (CTYPE *PTR, size_t COUNT) "[]" #GOTYPE
%typemap(in) (CTYPE *PTR, size_t COUNT) %{
  $1 = ($1_ltype)$input.array;
  $2 = (size_t)$input.len;
%}
%enddef

DPT_GO_SLICE(const float, float32, IN_FLOATS, IN_COUNT)
DPT_GO_SLICE(float, float32, OUT_FLOATS, OUT_COUNT)
DPT_GO_SLICE(const int32_t, int32, IN_INTS, IN_COUNT)
DPT_GO_SLICE(int32_t, int32, OUT_INTS, OUT_COUNT)
/* size_t is 64-bit on every supported platform: a []uint64 is an array of size_t. */
DPT_GO_SLICE(const size_t, uint64, IN_SIZES, IN_COUNT)

/* C strings: an empty Go string is NULL (the library's "default", e.g. the data directory); the copy
 * lives in a std::string so that it is freed on every return path (the stock typemap mallocs and frees
 * at the end of the wrapper, which an early error return would skip). */
%typemap(in) const char * (std::string temp) %{
  if ($input.n == 0) {
    $1 = NULL;
  } else {
    temp.assign($input.p, (size_t)$input.n);
    $1 = ($1_ltype)temp.c_str();
  }
%}
%typemap(freearg) const char * ""

%{
static_assert(sizeof(size_t) == sizeof(uint64_t), "the Go binding passes []uint64 as size_t arrays");
%}

/* ---- Module code -------------------------------------------------------------------------------- */

/* Headers and library through pkg-config: the installed dptrain.pc is relocatable, and the in-tree build
 * puts a build-tree dptrain.pc (with an rpath) first on PKG_CONFIG_PATH. */
%insert(cgo_comment) %{
#cgo pkg-config: dptrain
#cgo CXXFLAGS: -std=c++17
%}

/* Read (and clear) this thread's error slot. */
%inline %{
namespace dptrain_go {
inline int takeErrorStatus() {
  LastError &e = last_error();
  int s = e.status;
  e.status = 0;
  return s;
}
inline std::string takeErrorMessage() {
  std::string m;
  m.swap(last_error().message);
  return m;
}
}  // namespace dptrain_go
%}

/* The director's constructor and destructor never throw (and have no Go-visible wrapper name). */
%exception dptrain_binding::ProgressListener::ProgressListener %{ $action %}
%exception dptrain_binding::ProgressListener::~ProgressListener %{ $action %}

/* dptrain.i hides every free function; these helpers of its %inline block are wanted. */
%rename(VersionNumber) dptrain_binding::versionNumber;
%rename(VersionString) dptrain_binding::versionString;
%rename(StatusString) dptrain_binding::statusString;
