// File I/O of the core, in one place: whole-file reads and atomic replacement (temporary file in the same
// directory, fsync, rename over the target, fsync the directory). A fault-injection seam lets tests fail
// the n-th open, write, fsync, rename or directory fsync with a chosen errno.
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

// Reads a whole file; DPT_ERROR_IO when it cannot be read, DPT_ERROR_FORMAT when it exceeds max_bytes.
std::vector<unsigned char> read_file(const std::string &path, uint64_t max_bytes);

// Replaces path with bytes atomically: afterwards path holds either its old content or all of bytes.
// Throws DPT_ERROR_IO (naming the failed operation) and removes the temporary file on failure.
void write_file_atomic(const std::string &path, const std::vector<unsigned char> &bytes);

}  // namespace dpt::file_io
