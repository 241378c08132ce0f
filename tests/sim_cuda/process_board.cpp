#include "process_board.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>

namespace dpt_sim {

// At the start of the segment; the slots follow, aligned. A new segment is zero (ftruncate), which is
// every counter's start.
struct ProcessBoard::Header {
  std::atomic<uint64_t> joined;   // ranks registered
  std::atomic<uint64_t> arrived;  // arrivals of ranks, over every phase of every call
};

namespace {

constexpr size_t kSlotsOffset = 64;

}  // namespace

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string ProcessBoard::new_name() {
  std::random_device random;
  return "/dptrain-sim-nccl-" + std::to_string(getpid()) + "-" + std::to_string(random()) + "-" +
         std::to_string(random());
}

ProcessBoard *ProcessBoard::join(const std::string &name, int world_ranks, int first_rank, int local_count,
                                 double timeout_seconds, std::string &error) {
  const size_t bytes = kSlotsOffset + size_t(world_ranks) * kChunk * sizeof(float);
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    error = "shm_open(" + name + "): " + std::strerror(errno);
    return nullptr;
  }
  // Every process sizes it alike: growing it from 0 zeroes it, and the same size again changes nothing.
  if (ftruncate(fd, off_t(bytes)) != 0) {
    error = "ftruncate(" + name + "): " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (memory == MAP_FAILED) {
    error = "mmap(" + name + "): " + std::strerror(errno);
    return nullptr;
  }
  auto *board = new ProcessBoard();
  board->header_ = static_cast<Header *>(memory);
  board->bytes_ = bytes;
  board->world_ranks_ = world_ranks;
  board->first_rank_ = first_rank;
  board->local_count_ = local_count;
  const double deadline = steady_seconds() + timeout_seconds;
  board->header_->joined.fetch_add(uint64_t(local_count));
  while (board->header_->joined.load() < uint64_t(world_ranks)) {
    if (steady_seconds() > deadline) {
      error = "not every rank joined within " + std::to_string(timeout_seconds) + " s (" +
              std::to_string(board->header_->joined.load()) + " of " + std::to_string(world_ranks) + ")";
      shm_unlink(name.c_str());
      delete board;
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Every process has it mapped: the name can go (the segment lives until the last unmaps it).
  if (first_rank == 0) shm_unlink(name.c_str());
  return board;
}

ProcessBoard::~ProcessBoard() {
  if (header_ != nullptr) munmap(header_, bytes_);
}

float *ProcessBoard::slot(int rank) const {
  char *base = reinterpret_cast<char *>(header_) + kSlotsOffset;
  return reinterpret_cast<float *>(base) + size_t(rank) * kChunk;
}

bool ProcessBoard::arrive_and_wait(double deadline_seconds) {
  ++phases_;
  header_->arrived.fetch_add(uint64_t(local_count_));
  const uint64_t target = phases_ * uint64_t(world_ranks_);
  for (long round = 0; header_->arrived.load() < target; ++round) {
    if (steady_seconds() > deadline_seconds) return false;
    if (round > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

}  // namespace dpt_sim
