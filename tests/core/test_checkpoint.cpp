// Checkpoints: round trip across device counts; every single-byte corruption and every truncation is
// rejected without touching the trainer; NaN, infinite or (AdamW) negative state with valid CRCs is
// rejected the same way; model and optimizer mismatches; I/O failures injected at every open, write,
// fsync, rename and directory fsync; 200 SIGKILLs of a child in the middle of saving; temporary files of
// dead writers removed by the next save, those of live writers kept.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_format.hpp"
#include "io/crc32c.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  char pattern[] = "/tmp/dptrain-ckpt-XXXXXX";
  const char *dir = mkdtemp(pattern);
  if (dir == nullptr) fail_msg("mkdtemp failed");
  return dir;
}

std::shared_ptr<dpt::Context> context(size_t devices) {
  return std::make_shared<dpt::Context>(dpt::ContextConfig{devices, 0});
}

dpt::ModelSpec small_model() {
  dpt::ModelSpec m(dpt::Shape{1, 4, 4});
  m.add_dense(5);
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(3);
  return m;
}

dpt::TrainerConfig sgd_momentum(uint64_t seed) {
  dpt::TrainerConfig c;
  c.seed = seed;
  c.optimizer.momentum = 0.9f;
  return c;
}

std::vector<float> parameters(const dpt::Trainer &t) {
  std::vector<float> p(t.parameter_count());
  t.get_parameters(0, p.data());
  return p;
}

void train_steps(dpt::Trainer &t, int steps) {
  const size_t n = 8, in = t.spec().input().size();
  std::vector<float> x(n * in);
  std::vector<int32_t> y(n);
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7 + size_t(s) * 13) % 11) / 11.0f - 0.5f;
    for (size_t i = 0; i < n; ++i) y[i] = int32_t((i + size_t(s)) % 3);
    t.step(x.data(), y.data(), n);
  }
}

dpt_status load_status(dpt::Trainer &t, const std::string &path) {
  try {
    dpt::load_checkpoint(t, path);
    return DPT_OK;
  } catch (const dpt::Error &e) {
    return e.status();
  }
}

void write_bytes(const std::string &path, const std::vector<unsigned char> &bytes, size_t count) {
  FILE *f = std::fopen(path.c_str(), "wb");
  assert_non_null(f);
  if (count != 0) assert_int_equal(std::fwrite(bytes.data(), 1, count, f), count);
  std::fclose(f);
}

void test_crc32c_known_value(void **) {
  assert_int_equal(dpt::crc32c("123456789", 9), 0xE3069283u);  // the standard check value
  assert_int_equal(dpt::crc32c("", 0), 0u);
}

// Save on 3 devices, load on 1 and on 2: parameters, momentum and counters arrive, and training goes on
// identically (bitwise) on the same device count.
void test_round_trip_across_device_counts(void **) {
  const std::string dir = temp_dir(), path = dir + "/a.ckpt";
  dpt::Trainer source(context(3), small_model(), sgd_momentum(11));
  train_steps(source, 5);
  source.epochs_done = 2;
  dpt::save_checkpoint(source, path);
  for (size_t k : {1, 2, 3}) {
    dpt::Trainer target(context(k), small_model(), sgd_momentum(99));  // another seed: replaced by the file's
    dpt::load_checkpoint(target, path);
    assert_true(parameters(target) == parameters(source));
    assert_int_equal(target.optimizer_steps(), 5);
    assert_int_equal(target.epochs_done, 2);
    assert_int_equal(target.config().seed, 11);
    const dpt::TrainerState a = source.save_state(), b = target.save_state();
    assert_true(a.optimizer_state == b.optimizer_state);
    if (k == 3) {  // same devices: continuing gives bitwise the same parameters
      dpt::Trainer copy(context(3), small_model(), sgd_momentum(11));
      dpt::load_checkpoint(copy, path);
      train_steps(copy, 3);
      dpt::Trainer reference(context(3), small_model(), sgd_momentum(11));
      dpt::load_checkpoint(reference, path);
      train_steps(reference, 3);
      assert_true(parameters(copy) == parameters(reference));
    }
  }
  fs::remove_all(dir);
}

// Every byte of a small checkpoint flipped (two ways), one at a time, and every truncation: each load
// fails with a format-type status and leaves the trainer exactly as it was.
void test_every_corruption_is_rejected(void **) {
  const std::string dir = temp_dir(), good = dir + "/good.ckpt", bad = dir + "/bad.ckpt";
  dpt::Trainer source(context(1), small_model(), sgd_momentum(3));
  train_steps(source, 2);
  dpt::save_checkpoint(source, good);
  const std::vector<unsigned char> image = dpt::file_io::read_file(good, 1 << 20);
  dpt::Trainer target(context(2), small_model(), sgd_momentum(4));
  const std::vector<float> before = parameters(target);
  size_t rejected = 0;
  for (size_t i = 0; i < image.size(); ++i) {
    for (unsigned char mask : {0x01, 0xFF}) {
      std::vector<unsigned char> copy = image;
      copy[i] ^= mask;
      write_bytes(bad, copy, copy.size());
      const dpt_status s = load_status(target, bad);
      if (s != DPT_ERROR_FORMAT && s != DPT_ERROR_UNSUPPORTED)
        fail_msg("byte %zu ^ 0x%02x: status %d, expected a format error", i, mask, int(s));
      ++rejected;
    }
  }
  for (size_t length = 0; length < image.size(); ++length) {
    write_bytes(bad, image, length);
    if (load_status(target, bad) != DPT_ERROR_FORMAT)
      fail_msg("truncation to %zu bytes was not rejected", length);
    ++rejected;
  }
  std::vector<unsigned char> longer = image;
  longer.push_back(0);
  write_bytes(bad, longer, longer.size());
  assert_int_equal(load_status(target, bad), DPT_ERROR_FORMAT);
  assert_true(parameters(target) == before);  // no failed load changed anything
  assert_int_equal(target.optimizer_steps(), 0);
  std::printf("# %zu corrupted or truncated images of a %zu-byte checkpoint rejected\n", rejected,
              image.size());
  fs::remove_all(dir);
}

void test_mismatches_are_rejected(void **) {
  const std::string dir = temp_dir(), path = dir + "/m.ckpt";
  dpt::Trainer source(context(1), small_model(), sgd_momentum(1));
  dpt::save_checkpoint(source, path);
  dpt::ModelSpec other(dpt::Shape{1, 4, 4});  // same parameter count would not help: the description differs
  other.add_dense(5);
  other.add_activation(dpt::Activation::kRelu);
  other.add_dense(3);
  dpt::Trainer wrong_model(context(1), other, sgd_momentum(1));
  try {
    dpt::load_checkpoint(wrong_model, path);
    fail_msg("another architecture was accepted");
  } catch (const dpt::Error &e) {
    assert_int_equal(e.status(), DPT_ERROR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(e.what(), "relu"));
  }
  dpt::TrainerConfig adam = sgd_momentum(1);
  adam.optimizer.kind = dpt::OptimizerKind::kAdamW;
  dpt::Trainer wrong_optimizer(context(1), small_model(), adam);
  assert_int_equal(load_status(wrong_optimizer, path), DPT_ERROR_INVALID_ARGUMENT);
  dpt::TrainerConfig plain = sgd_momentum(1);
  plain.optimizer.momentum = 0;  // no momentum buffer: the state sizes differ
  dpt::Trainer wrong_state(context(1), small_model(), plain);
  assert_int_equal(load_status(wrong_state, path), DPT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(load_status(wrong_state, dir + "/missing.ckpt"), DPT_ERROR_IO);
  fs::remove_all(dir);
}

// The image with element `index` of the f32 tensor `name` set to `value`, re-encoded with valid CRCs.
std::vector<unsigned char> with_value(const std::vector<unsigned char> &image, const std::string &name,
                                      size_t index, float value) {
  std::vector<dpt::Tensor> tensors = dpt::decode_checkpoint(image, "image");
  bool found = false;
  for (dpt::Tensor &t : tensors)
    if (t.name == name) {
      assert_true((index + 1) * sizeof(float) <= t.bytes.size());
      std::memcpy(t.bytes.data() + index * sizeof(float), &value, sizeof value);
      found = true;
    }
  assert_true(found);
  return dpt::encode_checkpoint(tensors);
}

// Checkpoints whose CRCs are all valid but whose parameters or optimizer state hold a NaN or an infinity
// (or, for AdamW, a negative second moment, whose square root the next update takes) are rejected with
// DPT_ERROR_FORMAT naming the tensor and the index; the trainer is unchanged and goes on working.
void test_non_finite_state_is_rejected(void **) {
  const std::string dir = temp_dir(), good = dir + "/good.ckpt", bad = dir + "/bad.ckpt";
  dpt::TrainerConfig adam = sgd_momentum(7);
  adam.optimizer.kind = dpt::OptimizerKind::kAdamW;
  for (const dpt::TrainerConfig &config : {sgd_momentum(7), adam}) {
    const bool is_adam = config.optimizer.kind == dpt::OptimizerKind::kAdamW;
    dpt::Trainer source(context(1), small_model(), config);
    train_steps(source, 2);
    dpt::save_checkpoint(source, good);
    const std::vector<unsigned char> image = dpt::file_io::read_file(good, 1 << 20);
    const size_t p = source.parameter_count();
    struct Case {
      const char *tensor;
      size_t index;
      float value;
      std::string says;
    };
    std::vector<Case> cases = {
        {"model.parameters", 57, NAN, "model.parameters[57] is NaN"},
        {"model.parameters", 0, INFINITY, "model.parameters[0] is +Inf"},
        {"model.parameters", p - 1, -INFINITY, "model.parameters[" + std::to_string(p - 1) + "] is -Inf"},
        {"optimizer.state", 3, -INFINITY, "optimizer.state[3] is -Inf"},
        {"optimizer.state", p - 1, NAN, "optimizer.state[" + std::to_string(p - 1) + "] is NaN"},
    };
    if (is_adam) {
      cases.push_back(
          {"optimizer.state", p + 5, -0.5f,
           "optimizer.state[" + std::to_string(p + 5) + "] is negative (-0.5), an AdamW second moment"});
      cases.push_back({"optimizer.state", 2 * p - 1, INFINITY,
                       "optimizer.state[" + std::to_string(2 * p - 1) + "] is +Inf"});
    }
    dpt::Trainer target(context(2), small_model(), config);
    train_steps(target, 1);
    const std::vector<float> before = parameters(target);
    const dpt::TrainerState state_before = target.save_state();
    for (const Case &c : cases) {
      const std::vector<unsigned char> damaged = with_value(image, c.tensor, c.index, c.value);
      write_bytes(bad, damaged, damaged.size());
      const std::string message = dpt_test::expect_error([&] { dpt::load_checkpoint(target, bad); },
                                                         DPT_ERROR_FORMAT, c.says.c_str());
      if (message.find(c.says) == std::string::npos)
        fail_msg("the message '%s' does not say '%s'", message.c_str(), c.says.c_str());
    }
    assert_true(parameters(target) == before);  // unchanged
    const dpt::TrainerState state_after = target.save_state();
    assert_true(state_after.optimizer_state == state_before.optimizer_state);
    assert_int_equal(target.optimizer_steps(), 1);
    assert_int_equal(target.config().seed, 7);
    if (is_adam) {  // -0 is not negative: a second moment of -0 loads
      const std::vector<unsigned char> negative_zero = with_value(image, "optimizer.state", p + 1, -0.0f);
      write_bytes(bad, negative_zero, negative_zero.size());
      dpt::load_checkpoint(target, bad);
    }
    train_steps(target, 1);  // usable
    dpt::load_checkpoint(target, good);
    assert_true(parameters(target) == parameters(source));
    std::printf("# %s: %zu non-finite checkpoints rejected, the trainer unchanged\n",
                is_adam ? "AdamW" : "SGD", cases.size());
  }
  fs::remove_all(dir);
}

size_t temporary_files(const std::string &dir) {
  size_t n = 0;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) ++n;
  return n;
}

// An injected failure at each call of each operation: the save reports DPT_ERROR_IO, the file at the
// path is the complete old checkpoint (or, once the rename has happened, the complete new one), and no
// temporary file is left behind.
void test_injected_io_failures(void **) {
  using dpt::file_io::Op;
  const std::string dir = temp_dir(), path = dir + "/io.ckpt";
  dpt::Trainer old_state(context(1), small_model(), sgd_momentum(5));
  dpt::save_checkpoint(old_state, path);
  const std::vector<unsigned char> old_image = dpt::file_io::read_file(path, 1 << 20);
  dpt::Trainer new_state(context(1), small_model(), sgd_momentum(6));
  train_steps(new_state, 1);
  size_t injected = 0;
  for (Op op : {Op::kOpen, Op::kWrite, Op::kFsync, Op::kRename, Op::kFsyncDir}) {
    dpt::file_io::clear_faults();
    dpt::save_checkpoint(new_state, dir + "/probe.ckpt");  // counts the calls of one save
    const uint64_t calls = dpt::file_io::call_count(op);
    assert_true(calls >= 1);
    for (uint64_t nth = 1; nth <= calls; ++nth) {
      write_bytes(path, old_image, old_image.size());
      dpt::file_io::clear_faults();
      dpt::file_io::inject_fault(op, nth, op == Op::kWrite ? ENOSPC : EIO);
      try {
        dpt::save_checkpoint(new_state, path);
        fail_msg("injected failure %d/%llu was not reported", int(op), (unsigned long long)nth);
      } catch (const dpt::Error &e) {
        assert_int_equal(e.status(), DPT_ERROR_IO);
      }
      dpt::file_io::clear_faults();
      const std::vector<unsigned char> now = dpt::file_io::read_file(path, 1 << 20);
      dpt::Trainer check(context(1), small_model(), sgd_momentum(0));
      dpt::load_checkpoint(check, path);  // complete either way
      if (op == Op::kFsyncDir) {
        assert_true(parameters(check) == parameters(new_state));  // renamed already; durability unknown
      } else {
        assert_true(now == old_image);
      }
      assert_int_equal(temporary_files(dir), 0);
      ++injected;
    }
  }
  std::printf("# %zu injected I/O failures, each left a complete checkpoint\n", injected);
  fs::remove_all(dir);
}

// 200 trials: a child saves two alternating checkpoints in a loop and is SIGKILLed at a random moment.
// The file must then be one of the two, complete. (The child writes pre-encoded images: after fork()
// only the calling thread exists, so the child stays away from the device threads.)
void test_sigkill_during_save(void **) {
  const std::string dir = temp_dir(), path = dir + "/crash.ckpt";
  dpt::ModelSpec bigger = dpt::ModelSpec::builtin("lenet");  // ~0.5 MB: a save takes a while
  dpt::Trainer a(context(1), bigger, dpt::TrainerConfig{}), b(context(1), bigger, sgd_momentum(8));
  dpt::save_checkpoint(a, path);
  const std::vector<unsigned char> image_a = dpt::file_io::read_file(path, 1 << 24);
  dpt::save_checkpoint(b, path + ".b");
  const std::vector<unsigned char> image_b = dpt::file_io::read_file(path + ".b", 1 << 24);
  fs::remove(path + ".b");
  std::mt19937 rng(2026);
  size_t saw_a = 0, saw_b = 0, max_left = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const pid_t child = fork();
    if (child == 0) {
      for (uint64_t i = 0;; ++i) {
        try {
          dpt::file_io::write_file_atomic(path, i % 2 ? image_a : image_b);
        } catch (...) {
          _exit(3);
        }
      }
    }
    assert_true(child > 0);
    usleep(useconds_t(std::uniform_int_distribution<int>(0, 4000)(rng)));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    assert_true(WIFSIGNALED(status));
    const std::vector<unsigned char> now = dpt::file_io::read_file(path, 1 << 24);
    if (now == image_a) {
      ++saw_a;
    } else if (now == image_b) {
      ++saw_b;
    } else {
      fail_msg("trial %d: the file is neither checkpoint (%zu bytes)", trial, now.size());
    }
    // A killed save may leave its temporary file; the next child's first complete save removes it.
    max_left = std::max(max_left, temporary_files(dir));
  }
  std::printf("# 200 SIGKILLs during saves: %zu left the first checkpoint, %zu the second, 0 a mix\n", saw_a,
              saw_b);
  assert_true(saw_a + saw_b == 200);
  const size_t left = temporary_files(dir);
  dpt::file_io::write_file_atomic(path, image_a);  // every writer is dead now: this save removes the rest
  std::printf(
      "# temporary files of killed saves: at most %zu at a time, %zu after the 200 kills, %zu after one more "
      "save\n",
      max_left, left, temporary_files(dir));
  assert_int_equal(temporary_files(dir), 0);
  fs::remove_all(dir);
}

// A process id that no process has now: a child that has exited and been reaped.
pid_t dead_pid() {
  for (;;) {
    const pid_t child = fork();
    if (child == 0) _exit(0);
    assert_true(child > 0);
    waitpid(child, nullptr, 0);
    if (kill(child, 0) != 0 && errno == ESRCH) return child;  // else the id was taken again already
  }
}

void touch(const std::string &file, size_t bytes) {
  write_bytes(file, std::vector<unsigned char>(bytes, 0x5A), bytes);
}

// Temporary files that killed saves left: the next successful save of the same path removes those of
// writers that are gone (a dead pid; this process's pid where this process is not writing that file) and
// keeps those of live processes, files of other paths, and every name that is not exactly
// PATH.tmp-<pid>-<n>. A failed save removes nothing.
void test_stale_temporaries_are_removed(void **) {
  const std::string dir = temp_dir(), path = dir + "/s.ckpt";
  const std::string dead = std::to_string(dead_pid()), self = std::to_string(getpid());
  const pid_t live_child = fork();
  if (live_child == 0) {  // lives until killed below, or 60 s if the test fails first
    alarm(60);
    pause();
    _exit(0);
  }
  assert_true(live_child > 0);
  const std::string live = std::to_string(live_child), parent = std::to_string(getppid());
  const std::vector<std::string> stale = {"s.ckpt.tmp-" + dead + "-0", "s.ckpt.tmp-" + dead + "-12345",
                                          "s.ckpt.tmp-" + self + "-987654321"};
  const std::vector<std::string> kept = {
      "s.ckpt.tmp-" + live + "-0",          // a live process (a child of this test)
      "s.ckpt.tmp-" + parent + "-3",        // the process that runs the test
      "s.ckpt.tmp-1-0",                     // init: alive, and signalling it is not permitted (EPERM)
      "other.ckpt.tmp-" + dead + "-0",      // another target
      "xs.ckpt.tmp-" + dead + "-0",         // another target whose name ends like this one
      "s.ckpt.tmp-" + dead + "-0.partial",  // not exactly the pattern
      "s.ckpt.tmp-" + dead + "-",
      "s.ckpt.tmp-" + dead,
      "s.ckpt.tmp--" + dead + "-0",
      "s.ckpt.tmp-+" + dead + "-0",
      "s.ckpt.tmp-0" + dead + "-1",  // leading zero: not a name the writer makes
      "s.ckpt.tmp-" + dead + "-01",
      "s.ckpt.tmp-" + dead + "-1-2",
      "s.ckpt.tmp-" + dead + "-99999999999999999999999",  // overflows
      "s.ckpt.tmp-0-0",                                   // pid 0 is no process
      "s.ckpt.tmp-" + dead + "x-0",
      "s.ckpt",  // the checkpoint itself, written below
  };
  for (const std::string &name : stale) touch(dir + "/" + name, 1 << 20);
  for (const std::string &name : kept)
    if (name != "s.ckpt") touch(dir + "/" + name, 16);
  dpt::Trainer trainer(context(1), small_model(), sgd_momentum(2));

  dpt::file_io::clear_faults();
  dpt::file_io::inject_fault(dpt::file_io::Op::kRename, 1, EIO);
  dpt_test::expect_error([&] { dpt::save_checkpoint(trainer, path); }, DPT_ERROR_IO, "a failed save");
  dpt::file_io::clear_faults();
  for (const std::string &name : stale)
    if (!fs::exists(dir + "/" + name)) fail_msg("a failed save removed %s", name.c_str());

  dpt::save_checkpoint(trainer, path);
  size_t problems = 0;
  for (const std::string &name : stale)
    if (fs::exists(dir + "/" + name))
      print_error("%s (its writer is gone) was not removed\n", name.c_str()), ++problems;
  for (const std::string &name : kept)
    if (!fs::exists(dir + "/" + name)) print_error("%s was removed\n", name.c_str()), ++problems;
  kill(live_child, SIGKILL);
  waitpid(live_child, nullptr, 0);
  assert_int_equal(problems, 0);
  dpt::Trainer check(context(1), small_model(), sgd_momentum(0));
  dpt::load_checkpoint(check, path);
  assert_true(parameters(check) == parameters(trainer));
  std::printf("# %zu temporary files of gone writers removed, %zu other files kept\n", stale.size(),
              kept.size());
  fs::remove_all(dir);
}

// A killed process with this process's pid (a container restarted, say) may have left the very names
// this process takes next. The save goes on with the next free name, and removes those files.
void test_taken_temporary_names(void **) {
  const std::string dir = temp_dir(), path = dir + "/t.ckpt";
  dpt::Trainer trainer(context(1), small_model(), sgd_momentum(4));
  // Which number does the next save take? An injected fsync failure names the temporary file.
  dpt::file_io::clear_faults();
  dpt::file_io::inject_fault(dpt::file_io::Op::kFsync, 1, EIO);
  const std::string message = dpt_test::expect_error([&] { dpt::save_checkpoint(trainer, path); },
                                                     DPT_ERROR_IO, "an injected fsync failure");
  dpt::file_io::clear_faults();
  const std::string marker = ".tmp-" + std::to_string(getpid()) + "-";
  const size_t at = message.find(marker);
  if (at == std::string::npos) fail_msg("no temporary name in '%s'", message.c_str());
  const unsigned long long used = std::strtoull(message.c_str() + at + marker.size(), nullptr, 10);
  std::vector<std::string> taken;
  for (unsigned long long n = used + 1; n <= used + 3; ++n) {
    taken.push_back(path + marker + std::to_string(n));  // the name docs/checkpoint-format.md gives
    touch(taken.back(), 100);
  }
  try {
    dpt::save_checkpoint(trainer, path);
  } catch (const dpt::Error &e) {  // what an open(O_EXCL) of a taken name used to give
    fail_msg("the save failed: %s", e.what());
  }
  for (const std::string &file : taken)
    if (fs::exists(file)) fail_msg("%s was not removed", file.c_str());
  dpt::Trainer check(context(1), small_model(), sgd_momentum(0));
  dpt::load_checkpoint(check, path);
  assert_true(parameters(check) == parameters(trainer));
  assert_int_equal(temporary_files(dir), 0);
  fs::remove_all(dir);
}

// Two threads of this process save the same path at once, again and again: neither removes the other's
// temporary file while it is being written (each save succeeds), and none is left at the end.
void test_concurrent_saves_keep_live_temporaries(void **) {
  const std::string dir = temp_dir(), path = dir + "/c.ckpt";
  const std::vector<unsigned char> a(256 << 10, 0xA5), b(256 << 10, 0x5A);
  std::atomic<int> failures{0};
  auto saver = [&](const std::vector<unsigned char> &bytes) {
    for (int i = 0; i < 60; ++i) {
      try {
        dpt::file_io::write_file_atomic(path, bytes);
      } catch (const dpt::Error &e) {
        if (failures.fetch_add(1) == 0) std::printf("# a concurrent save failed: %s\n", e.what());
      }
    }
  };
  std::thread first(saver, std::cref(a)), second(saver, std::cref(b));
  first.join();
  second.join();
  assert_int_equal(failures.load(), 0);
  assert_int_equal(temporary_files(dir), 0);
  fs::remove_all(dir);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_known_value),
      cmocka_unit_test(test_round_trip_across_device_counts),
      cmocka_unit_test(test_every_corruption_is_rejected),
      cmocka_unit_test(test_mismatches_are_rejected),
      cmocka_unit_test(test_non_finite_state_is_rejected),
      cmocka_unit_test(test_injected_io_failures),
      cmocka_unit_test(test_sigkill_during_save),
      cmocka_unit_test(test_stale_temporaries_are_removed),
      cmocka_unit_test(test_taken_temporary_names),
      cmocka_unit_test(test_concurrent_saves_keep_live_temporaries),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
