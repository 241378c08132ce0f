// The processes of a multi-process run: MPI, reached through the loadable module libdptrain_mpi.so so that
// libdptrain.so itself never links MPI. One World per process, created on first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/wire_type.hpp"
#include "interface/world_interface.h"

namespace dpt {

// A World's channels (world_interface.h): the same processes on communicators of their own, so that
// collectives called from two threads at once never meet. kMain: the trainer's and the device threads' calls
// (batch statistics, the update phase, state exchanges); kBuckets: the communication threads' sums of
// gradient buckets during backward.
enum class WorldChannel { kMain = DPT_WORLD_CHANNEL_MAIN, kBuckets = DPT_WORLD_CHANNEL_BUCKETS };

class World {
 public:
  // Loads the module and initializes MPI if the application has not. Throws DPT_ERROR_UNSUPPORTED with
  // the reason when there is no usable MPI module, DPT_ERROR_COMMUNICATION when MPI fails to start.
  static World &get();  // on the main channel
  // Ends MPI if get() started it (no-op otherwise, and when get() was never called). After this, get()
  // fails: MPI cannot be started twice in one process.
  static void finalize();

  size_t rank() const { return rank_; }
  size_t size() const { return size_; }
  const std::string &library_version() const { return version_; }
  // This World on another channel: the calls of one channel may run while another's do, from another
  // thread; within a channel, every process calls the same collectives in the same order.
  const World &channel(WorldChannel which) const { return *channels_[size_t(which)]; }
  // Channels for streams of collectives beyond the two (a pipeline's stages, each summing its batch
  // statistics from its own device thread): makes sure at least count exist (collective when the pool grows:
  // every process asks at the same point, as it builds the same trainer) and returns the k-th. The pool is
  // shared by every trainer of the process and lasts until finalize.
  void reserve_pooled_channels(size_t count) const;
  const World &pooled_channel(size_t k) const;
  // This process's block of `block` consecutive processes of this (whole) World (ranks [k block, (k + 1)
  // block)), as a World of their own (ranked as here; its own main channel and pool of channels):
  // collective over every process, each passing the same block size, at the same point; made once per
  // block size and kept, as the channels are, until finalize.
  const World &split(size_t block) const;

  // Sums in place over every process; throws DPT_ERROR_TIMEOUT after timeout_seconds (0 = none), or
  // DPT_ERROR_COMMUNICATION. Calls on one channel must not overlap. A 16-bit
  // wire sends 16-bit values: the buffer's chunks go to their owner processes (an all-to-all), each
  // owner sums its chunk over the processes in process order in float32 and rounds the sum, and the
  // sums go to every process (an all-gather): half the bytes of a float32 all-reduce, the same bits on
  // every process.
  void all_reduce(float *buffer, size_t count, double timeout_seconds, WireType wire = WireType::kF32) const;
  void all_reduce(double *buffer, size_t count, double timeout_seconds) const;
  // Sums the elements [begin, end) of a vector over every process (range[0] is element begin) where process
  // p needs only its span [spans[p], spans[p + 1]) (size + 1 ascending offsets) of them: afterwards this
  // process's span within [begin, end) holds the sums, the rest of the range is undefined. float32:
  // MPI_Reduce_scatter (each process receives only its part, half the bytes of an all-reduce; with two
  // processes every sum has two terms, so the all-reduce's bits). A 16-bit wire all-reduces the range (its
  // bytes are those of a float32 reduce-scatter).
  void reduce_scatter(float *range, size_t begin, size_t end, const size_t *spans, double timeout_seconds,
                      WireType wire = WireType::kF32) const;
  void broadcast(void *buffer, size_t bytes, size_t root, double timeout_seconds) const;

  // One-sided reads of the other processes' memory (world_interface.h). open_window is collective (every
  // process once, at the same point; later calls return at once). expose makes this process's bytes
  // readable and returns the address the others read them by (local). withdraw (collective, on the
  // window's own communicator, every process in the same order) ends the exposure of bases once every
  // process has stopped reading. get copies bytes of process's exposed memory, from any thread, without
  // the other process taking part. publish (collective on this channel): after it returns everywhere,
  // every get sees what each process wrote to its exposed memory before calling it.
  void open_window() const;
  uint64_t expose(void *base, size_t bytes) const;
  void withdraw(const std::vector<void *> &bases, double timeout_seconds) const;
  void get(void *destination, size_t bytes, size_t process, uint64_t address, double timeout_seconds) const;
  void publish(double timeout_seconds) const;
  // get in two halves (the read proceeds in between): start_get returns a handle (nullptr for 0 bytes)
  // that finish_get must be given exactly once, also when the bytes are no longer wanted (until then
  // destination may still be written); finish_get frees it, also when it throws.
  void *start_get(void *destination, size_t bytes, size_t process, uint64_t address) const;
  void finish_get(void *pending, double timeout_seconds) const;
  // Messages between two processes (world_interface.h): start_send returns a handle (nullptr for 0 bytes)
  // that finish_send must be given exactly once; the buffer stays untouched until then. finish_send waits
  // for the send, or (abandon, after a failure) withdraws it. receive waits for a message of bytes from
  // process with tag (a receive that fails or times out is withdrawn: it writes nothing afterwards).
  // wait_message waits until such a message is there, without receiving it (a stage's wait for its
  // neighbour apart from the transfer). Messages of one channel, sender and tag arrive in the order sent.
  // Any thread.
  void *start_send(const void *buffer, size_t bytes, size_t process, int tag) const;
  void finish_send(void *pending, double timeout_seconds, bool abandon = false) const;
  void receive(void *buffer, size_t bytes, size_t process, int tag, double timeout_seconds) const;
  void wait_message(size_t process, int tag, double timeout_seconds) const;

 private:
  World() = default;
  void check(int result, const char *error) const;
  void all_reduce_16(float *buffer, size_t count, double timeout_seconds, WireType wire) const;

  const dpt_world_v1 *api_ = nullptr;
  int channel_ = DPT_WORLD_CHANNEL_MAIN;
  long color_ = -1;  // split's: the processes of this color (-1: every process)
  const World *channels_[DPT_WORLD_CHANNELS] = {};  // this World on each channel
  size_t rank_ = 0, size_ = 1;
  std::string version_;
  // all_reduce_16's staging (what is sent, received and gathered), kept between calls; each channel's
  // World has its own, as calls on two channels may overlap.
  mutable std::vector<uint16_t> send_, received_, gathered_;
  mutable std::vector<size_t> counts_;  // reduce_scatter's parts
};

}  // namespace dpt
