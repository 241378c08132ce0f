// File I/O of the core, in one place: reads of regular files only (a FIFO, directory or device is refused
// before a read could block), and atomic replacement (temporary file in the same directory, fsync, rename
// over the target, fsync the directory; afterwards temporary files of that target left by writers that
// died are removed). A fault-injection seam lets tests fail the n-th open, write, fsync, rename or
// directory fsync with a chosen errno.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpt::file_io {

enum class Op { kOpen, kWrite, kFsync, kRename, kFsyncDir, kRead };

// Test seam: from now on, the nth (1-based) call of op fails with error (an errno value). nth 0 clears it.
// Process-wide; meant for tests only.
void inject_fault(Op op, uint64_t nth, int error);
void clear_faults();
// How many times op has been attempted since the last clear_faults() (lets a test enumerate every call).
uint64_t call_count(Op op);

// A regular file open for reading. Anything else is refused with DPT_ERROR_IO ("'x' is not a regular file
// (a FIFO)"): the path is opened non-blocking (so that a FIFO without a writer cannot block the open),
// checked with fstat, and only then switched to blocking reads.
class InputFile {
 public:
  explicit InputFile(const std::string &path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  // The size when opened.
  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }
  // Reads up to n bytes; fewer only at the end of the file, 0 there. DPT_ERROR_IO on failure.
  size_t read(void *destination, size_t n);
  // Reads until n bytes or the end of the file; returns how many were read.
  size_t read_fully(void *destination, size_t n);

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Reads a whole regular file; DPT_ERROR_IO when it cannot be read or is not a regular file,
// DPT_ERROR_FORMAT when it exceeds max_bytes (checked before anything is read or allocated).
std::vector<unsigned char> read_file(const std::string &path, uint64_t max_bytes);

// Replaces path with bytes atomically: afterwards path holds either its old content or all of bytes.
// Throws DPT_ERROR_IO (naming the failed operation) and removes the temporary file on failure. The
// temporary file is temporary_name(path, pid, n) for the next free n. After a successful replacement, the
// temporary files of path that a killed writer left behind are removed (remove_stale_temporaries).
void write_file_atomic(const std::string &path, const std::vector<unsigned char> &bytes);

// "PATH.tmp-<pid>-<n>": the temporary file a writer process pid uses for path.
std::string temporary_name(const std::string &path, uint64_t pid, uint64_t n);

// Removes the files of path's directory named exactly temporary_name(path, pid, n) (decimal pid and n,
// no sign, no leading zeros) whose writer is gone: pid is not a running process, or it is this process
// and no write_file_atomic of this process is writing that file. Best effort: failures are ignored.
// Returns how many files were removed. (Called by write_file_atomic; exposed for tests.)
size_t remove_stale_temporaries(const std::string &path);

}  // namespace dpt::file_io
