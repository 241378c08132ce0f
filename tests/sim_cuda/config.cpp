// The simulator's environment: DPTRAIN_SIM_CUDA_DEVICES and DPTRAIN_SIM_CUDA_MEMORY (read once), and the
// failures DPTRAIN_SIM_CUDA_FAIL asks for (read at every call).
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "sim.hpp"

namespace dpt_sim {

int report(const Error &e, int code, const char *format, ...) {
  if (e.text == nullptr || e.size == 0) return code;
  va_list args;
  va_start(args, format);
  std::vsnprintf(e.text, e.size, format, args);
  va_end(args);
  for (char *c = e.text; *c != '\0'; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  return code;
}

namespace {

// A whole decimal number with an optional binary suffix K, M, G or T; false when text is not one.
bool parse_size(const char *text, uint64_t &value) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  errno = 0;
  char *end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  switch (*end) {
    case '\0':
      break;
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    case 'T':
    case 't':
      shift = 40;
      break;
    default:
      return false;
  }
  if (*end != '\0' && end[1] != '\0') return false;
  if (shift > 0 && v > (UINT64_MAX >> shift)) return false;
  value = uint64_t(v) << shift;
  return true;
}

Config read_config() {
  Config c;
  if (const char *d = std::getenv("DPTRAIN_SIM_CUDA_DEVICES"); d != nullptr && *d != '\0') {
    uint64_t v = 0;
    if (!parse_size(d, v) || v > uint64_t(kMaxDevices) || std::strpbrk(d, "KkMmGgTt") != nullptr) {
      c.problem = std::string("DPTRAIN_SIM_CUDA_DEVICES='") + d + "' is not a device count (0 .. " +
                  std::to_string(kMaxDevices) + ")";
      c.devices = 0;
    } else {
      c.devices = int(v);
    }
  }
  if (const char *m = std::getenv("DPTRAIN_SIM_CUDA_MEMORY"); m != nullptr && *m != '\0') {
    uint64_t v = 0;
    constexpr uint64_t kMin = uint64_t(1) << 20, kMax = uint64_t(1) << 40;
    if (!parse_size(m, v) || v < kMin || v > kMax) {
      if (c.problem.empty())
        c.problem = std::string("DPTRAIN_SIM_CUDA_MEMORY='") + m +
                    "' is not a memory size (bytes, or with K, M, G, T; 1 MiB .. 1 TiB)";
      c.devices = 0;
    } else {
      c.capacity = (v + 4095) / 4096 * 4096;  // whole pages
    }
  }
  return c;
}

// ---- DPTRAIN_SIM_CUDA_FAIL ----

struct FaultEntry {
  std::string member;
  int ordinal = 0;     // kAnyOrdinal for '*'
  uint64_t from = 0;   // the first call (0-based) that fails
  bool async = false;  // the failure surfaces when the queued work runs
  uint64_t calls = 0;  // calls of member on a matching device so far
};

// The members of the table, and the test extension's self_test.
const char *const kMembers[] = {
#define DPT_SIM_NAME(name) #name,
    DPT_BACKEND_V2_FUNCTIONS(DPT_SIM_NAME)
#undef DPT_SIM_NAME
        "self_test",
};

// A member, or an op call of the simulator's: "op_forward(conv2d)".
bool known_member(const std::string &name) {
  for (const char *m : kMembers)
    if (name == m) return true;
  return op_label_known(name);
}

// An entry of member "op_forward" matches every op's call "op_forward(conv2d)"; one of "op_forward(conv2d)"
// only that op's.
bool matches(const std::string &entry, const char *member) {
  if (entry == member) return true;
  const char *paren = std::strchr(member, '(');
  return paren != nullptr && entry.size() == size_t(paren - member) &&
         entry.compare(0, entry.size(), member, entry.size()) == 0;
}

// Parses "member@ordinal[#N][:async]" entries separated by commas; warns (once per value) on stderr about
// entries it cannot read, which are ignored.
std::vector<FaultEntry> parse_faults(const std::string &text) {
  std::vector<FaultEntry> entries;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    FaultEntry f;
    bool ok = true;
    const std::string async_suffix = ":async";
    if (item.size() > async_suffix.size() &&
        item.compare(item.size() - async_suffix.size(), async_suffix.size(), async_suffix) == 0) {
      f.async = true;
      item.resize(item.size() - async_suffix.size());
    }
    const size_t at = item.find('@');
    const size_t hash = item.find('#');
    ok = at != std::string::npos && at > 0 && (hash == std::string::npos || hash > at + 1);
    if (ok) {
      f.member = item.substr(0, at);
      const std::string ordinal =
          item.substr(at + 1, hash == std::string::npos ? std::string::npos : hash - at - 1);
      uint64_t v = 0;
      if (ordinal == "*")
        f.ordinal = kAnyOrdinal;
      else if (parse_size(ordinal.c_str(), v) && v < uint64_t(kMaxDevices) &&
               ordinal.find_first_not_of("0123456789") == std::string::npos)
        f.ordinal = int(v);
      else
        ok = false;
      if (ok && hash != std::string::npos) {
        const std::string n = item.substr(hash + 1);
        ok = !n.empty() && n.find_first_not_of("0123456789") == std::string::npos && parse_size(n.c_str(), v);
        f.from = v;
      }
      ok = ok && known_member(f.member);
    }
    if (ok)
      entries.push_back(f);
    else
      std::fprintf(stderr,
                   "dptrain simulated CUDA backend: DPTRAIN_SIM_CUDA_FAIL entry '%s' ignored (expected "
                   "member@ordinal[#N][:async], member a backend interface function or an op call as "
                   "op_forward(conv2d), ordinal a number or *)\n",
                   item.c_str());
  }
  return entries;
}

std::mutex fault_mutex;
std::string fault_text;  // the value the entries were parsed from; a new value starts the counts afresh
std::vector<FaultEntry> fault_entries;

}  // namespace

const Config &config() {
  static const Config c = read_config();
  return c;
}

int device_count_or_report(const Error &e, int ordinal, const char *call, int &count) {
  const Config &c = config();
  count = c.devices;
  if (c.devices > 0) return 0;
  const std::string why =
      c.problem.empty() ? "no CUDA GPU found (simulated: DPTRAIN_SIM_CUDA_DEVICES=0)" : c.problem;
  if (call == nullptr) return report(e, DPT_BACKEND_ERROR, "%s", why.c_str());
  // As the real module: the call that found no device is cudaGetDeviceCount.
  return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: cudaGetDeviceCount: %s", ordinal, call, why.c_str());
}

Fault fault(const char *member, int ordinal) {
  try {
    std::lock_guard<std::mutex> lock(fault_mutex);
    const char *env = std::getenv("DPTRAIN_SIM_CUDA_FAIL");
    const std::string text = env != nullptr ? env : "";
    if (text != fault_text) {
      fault_text = text;
      fault_entries = parse_faults(text);
    }
    Fault result = Fault::kNone;
    for (FaultEntry &f : fault_entries) {
      if (!matches(f.member, member)) continue;
      if (f.ordinal != kAnyOrdinal && ordinal != kAnyOrdinal && f.ordinal != ordinal) continue;
      const uint64_t call = f.calls++;
      if (call >= f.from && result == Fault::kNone) result = f.async ? Fault::kAsync : Fault::kNow;
    }
    return result;
  } catch (...) {
    return Fault::kNone;
  }
}

int simulated_failure(const Error &e, int ordinal, const char *member, bool async) {
  return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: simulated %sfailure (DPTRAIN_SIM_CUDA_FAIL)", ordinal,
                member, async ? "asynchronous " : "");
}

}  // namespace dpt_sim
