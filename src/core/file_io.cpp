#include "core/file_io.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt::file_io {

namespace {

constexpr size_t kOps = 6;
struct Fault {
  std::atomic<uint64_t> nth{0};
  std::atomic<int> error{0};
  std::atomic<uint64_t> calls{0};
};
std::array<Fault, kOps> faults;

// The verb of "cannot <verb> 'path': reason".
const char *op_name(Op op) {
  switch (op) {
    case Op::kOpen:
      return "open";
    case Op::kWrite:
      return "write";
    case Op::kFsync:
      return "fsync";
    case Op::kRename:
      return "rename onto";
    case Op::kFsyncDir:
      return "fsync the directory";
    case Op::kRead:
      return "read";
  }
  return "?";
}

// Counts the call and reports an injected failure by setting errno and returning true.
bool injected(Op op) {
  Fault &f = faults[size_t(op)];
  const uint64_t call = f.calls.fetch_add(1) + 1;
  if (f.nth.load() != 0 && call == f.nth.load()) {
    errno = f.error.load();
    return true;
  }
  return false;
}

[[noreturn]] void io_error(Op op, const std::string &path) {
  throw_error(DPT_ERROR_IO,
              std::string("cannot ") + op_name(op) + " '" + path + "': " + std::strerror(errno));
}

std::string directory_of(const std::string &path) {
  const size_t slash = path.find_last_of(platform::kDirectorySeparators);
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name_of(const std::string &path) {
  const size_t slash = path.find_last_of(platform::kDirectorySeparators);
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Closes a descriptor on scope exit unless released.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) platform::close_file(fd);
  }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

const char *kind_name(platform::FileKind kind) {
  using platform::FileKind;
  switch (kind) {
    case FileKind::kDirectory:
      return "a directory";
    case FileKind::kFifo:
      return "a FIFO";
    case FileKind::kCharDevice:
      return "a character device";
    case FileKind::kBlockDevice:
      return "a block device";
    case FileKind::kSocket:
      return "a socket";
    default:
      return "of an unknown kind";
  }
}

[[noreturn]] void not_regular(const std::string &path, platform::FileKind kind) {
  throw_error(DPT_ERROR_IO, "'" + path + "' is not a regular file (" + kind_name(kind) + ")");
}

// The temporary-file numbers this process is writing now (write_file_atomic registers a number before it
// creates the file and forgets it once the file is renamed or removed), so that remove_stale_temporaries
// can tell this process's live temporary files from those a dead process with the same pid left behind.
std::mutex in_flight_mutex;
std::set<uint64_t> in_flight;

struct InFlight {
  uint64_t n;
  explicit InFlight(uint64_t number) : n(number) {
    std::lock_guard<std::mutex> lock(in_flight_mutex);
    in_flight.insert(n);
  }
  ~InFlight() {
    std::lock_guard<std::mutex> lock(in_flight_mutex);
    in_flight.erase(n);
  }
  InFlight(const InFlight &) = delete;
  InFlight &operator=(const InFlight &) = delete;
};

bool is_in_flight(uint64_t n) {
  std::lock_guard<std::mutex> lock(in_flight_mutex);
  return in_flight.count(n) != 0;
}

// Parses a canonical decimal number (no sign, no leading zero unless it is 0) at the start of text;
// returns the characters used, 0 when there is none or it overflows.
size_t parse_decimal(const char *text, uint64_t &value) {
  size_t i = 0;
  value = 0;
  while (text[i] >= '0' && text[i] <= '9') {
    const uint64_t digit = uint64_t(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return 0;
    value = value * 10 + digit;
    ++i;
  }
  if (i > 1 && text[0] == '0') return 0;
  return i;
}

}  // namespace

void inject_fault(Op op, uint64_t nth, int error) {
  faults[size_t(op)].error = error;
  faults[size_t(op)].nth = nth;
}

void clear_faults() {
  for (Fault &f : faults) f.nth = 0, f.calls = 0, f.error = 0;
}

uint64_t call_count(Op op) {
  return faults[size_t(op)].calls.load();
}

InputFile::InputFile(const std::string &path) : path_(path) {
  // Refuse what is visibly not a regular file without opening it (opening a FIFO or a device can block
  // or have effects); the kind of the opened file is the check that counts.
  using platform::FileKind;
  const FileKind before = platform::file_kind(path);
  if (before != FileKind::kMissing && before != FileKind::kRegular) not_regular(path, before);
  Fd file;
  FileKind kind = FileKind::kMissing;
  if (injected(Op::kOpen) || (file.fd = platform::open_for_reading(path, kind, size_)) < 0)
    io_error(Op::kOpen, path);
  if (kind != FileKind::kRegular) not_regular(path, kind);
  fd_ = file.release();
}

InputFile::~InputFile() {
  if (fd_ >= 0) platform::close_file(fd_);
}

size_t InputFile::read(void *destination, size_t n) {
  constexpr size_t kMaxRead = size_t(1) << 30;  // what one read() call is asked for at most
  for (;;) {
    const int64_t got =
        injected(Op::kRead) ? -1 : platform::read_some(fd_, destination, std::min(n, kMaxRead));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) io_error(Op::kRead, path_);
    return size_t(got);
  }
}

size_t InputFile::read_fully(void *destination, size_t n) {
  size_t done = 0;
  while (done < n) {
    const size_t got = read(static_cast<unsigned char *>(destination) + done, n - done);
    if (got == 0) break;
    done += got;
  }
  return done;
}

std::vector<unsigned char> read_file(const std::string &path, uint64_t max_bytes) {
  InputFile file(path);
  DPT_REQUIRE(file.size() <= max_bytes, DPT_ERROR_FORMAT,
              "'" + path + "' is " + std::to_string(file.size()) + " bytes, more than the limit of " +
                  std::to_string(max_bytes));
  std::vector<unsigned char> data(size_t(file.size()));
  // A file that shrank while reading gives what it has: the caller's format checks it.
  data.resize(file.read_fully(data.data(), data.size()));
  return data;
}

std::string temporary_name(const std::string &path, uint64_t pid, uint64_t n) {
  return path + ".tmp-" + std::to_string(pid) + "-" + std::to_string(n);
}

size_t remove_stale_temporaries(const std::string &path) {
  const std::string directory = directory_of(path), prefix = base_name_of(path) + ".tmp-";
  if (prefix.size() == 5) return 0;  // path names a directory
  const auto entries = platform::directory_entries(directory);
  if (!entries) return 0;
  const uint64_t self = platform::process_id();
  std::vector<std::string> stale;
  for (const std::string &entry : *entries) {
    const char *name = entry.c_str();
    if (std::strncmp(name, prefix.c_str(), prefix.size()) != 0) continue;
    // Exactly <prefix><pid>-<n>, as temporary_name writes it.
    uint64_t pid = 0, n = 0;
    const char *rest = name + prefix.size();
    const size_t pid_digits = parse_decimal(rest, pid);
    if (pid_digits == 0 || rest[pid_digits] != '-') continue;
    const size_t n_digits = parse_decimal(rest + pid_digits + 1, n);
    if (n_digits == 0 || rest[pid_digits + 1 + n_digits] != '\0') continue;
    const bool gone = pid == self ? !is_in_flight(n) : platform::process_is_gone(pid);
    if (gone) stale.push_back(temporary_name(path, pid, n));
  }
  size_t removed = 0;
  for (const std::string &file : stale)
    if (platform::remove_file(file)) ++removed;
  return removed;
}

void write_file_atomic(const std::string &path, const std::vector<unsigned char> &bytes) {
  static std::atomic<uint64_t> counter{0};
  // The name may be taken by a file that a killed writer with the same pid left behind (a container
  // restarted with the same pid, say): then the next number is tried.
  constexpr int kAttempts = 1000;
  Fd file;
  std::string temporary;
  std::optional<InFlight> registered;
  for (int attempt = 1;; ++attempt) {
    const uint64_t number = counter.fetch_add(1);
    temporary = temporary_name(path, platform::process_id(), number);
    registered.emplace(number);  // before the file exists: a concurrent cleanup never sees it unregistered
    if (!injected(Op::kOpen) && (file.fd = platform::create_new_file(temporary)) >= 0) break;
    const int error = errno;
    registered.reset();
    errno = error;
    if (error != EEXIST || attempt == kAttempts) io_error(Op::kOpen, temporary);
  }
  try {
    size_t done = 0;
    constexpr size_t kChunk = 1 << 20;
    while (done < bytes.size()) {
      const size_t want = std::min(kChunk, bytes.size() - done);
      const int64_t n = injected(Op::kWrite) ? -1 : platform::write_some(file.fd, bytes.data() + done, want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) io_error(Op::kWrite, temporary);
      done += size_t(n);
    }
    if (injected(Op::kFsync) || !platform::flush_to_disk(file.fd)) io_error(Op::kFsync, temporary);
    platform::close_file(file.release());
    if (injected(Op::kRename) || !platform::replace_file(temporary, path)) io_error(Op::kRename, path);
  } catch (...) {
    platform::remove_file(temporary);
    throw;
  }
  registered.reset();
  // The rename is only durable once the directory entry is on disk.
  const std::string directory = directory_of(path);
  if (injected(Op::kFsyncDir) || !platform::sync_directory(directory)) io_error(Op::kFsyncDir, directory);
  try {  // best effort: the save has succeeded whatever happens here
    remove_stale_temporaries(path);
  } catch (...) {
  }
}

}  // namespace dpt::file_io
