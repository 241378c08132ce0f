// Per-device figures as data: each replica's times in the last step call (Trainer::replica_times) and summed
// over all (replica_totals), and the trainer's timeline (Trainer::start_trace / write_trace, TraceRecorder):
// valid Chrome trace-event JSON with two named rows per device; every op's forward and backward on its
// device's compute row, once per pass; bucket reductions on the communication rows, one per bucket and step;
// gathers and updates where they run; no event overlapping the next on a row; a full row drops and says so;
// recording changes no bit of training; misuse is an error status.
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "graph/json.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

// flatten (a view: no op runs), then five ops with a backward each.
dpt::ModelSpec model() {
  dpt::ModelSpec m(dpt::Shape{1, 8, 8});
  m.add_flatten();
  m.add_dense(256);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(128);
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(5);
  return m;
}
constexpr size_t kOps = 5;

std::unique_ptr<dpt::Trainer> make_trainer(dpt::ShardMode shard, size_t bucket_bytes) {
  dpt::TrainerConfig c;
  c.seed = 3;
  c.shard = shard;
  c.bucket_bytes = bucket_bytes;
  c.optimizer.momentum = 0.9f;
  return std::make_unique<dpt::Trainer>(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), model(), c);
}

void step(dpt::Trainer &t, size_t s) {
  dpt_test::TestRng rng(40 + s);
  const std::vector<float> x = rng.vector(12 * 64, -1.0f, 1.0f);
  std::vector<int32_t> y(12);
  for (auto &label : y) label = int32_t(rng.below(5));
  t.step(x.data(), y.data(), 12);
}

std::string temp_path(const char *name) {
  return std::string(P_tmpdir) + "/dptrain_test_trace_" + name + ".json";
}

struct Event {
  std::string name, cat, ph;
  double ts = 0, dur = 0;
};

// The trace's events by row (tid), and the rows' names.
struct Trace {
  std::map<int64_t, std::vector<Event>> rows;
  std::map<int64_t, std::string> names;
  size_t count(int64_t row, const std::string &cat) const {
    size_t n = 0;
    if (rows.count(row) != 0)
      for (const Event &e : rows.at(row)) n += e.ph == "X" && e.cat == cat;
    return n;
  }
};

Trace read_trace(const std::string &path) {
  dpt::json::Limits limits;
  limits.max_bytes = size_t(64) << 20;
  const dpt::json::Value doc = dpt::json::parse(dpt_test::read_file(path), limits);
  const dpt::json::Value *events = doc.find("traceEvents");
  assert_non_null(events);
  Trace t;
  for (const dpt::json::Value &v : events->items) {
    Event e;
    e.ph = v.find("ph")->text;
    const int64_t tid = dpt::json::to_int64(*v.find("tid"), "tid");
    if (e.ph == "M") {
      if (v.find("name")->text == "thread_name") t.names[tid] = v.find("args")->find("name")->text;
      continue;
    }
    e.name = v.find("name")->text;
    if (e.ph == "X") {
      e.cat = v.find("cat")->text;
      e.ts = dpt::json::to_double(*v.find("ts"), "ts");
      e.dur = dpt::json::to_double(*v.find("dur"), "dur");
    }
    t.rows[tid].push_back(e);
  }
  return t;
}

// Sharded parameters with buckets: gathers and updates on the compute rows, a reduce-scatter per bucket
// on the communication rows; an evaluation adds one forward per op.
void test_trace_of_sharded_training(void **) {
  auto t = make_trainer(dpt::ShardMode::kParameters, 4096);
  t->start_trace(10000);
  for (size_t s = 0; s < 2; ++s) step(*t, s);
  dpt_test::TestRng rng(9);
  const std::vector<float> x = rng.vector(6 * 64, -1.0f, 1.0f);
  std::vector<int32_t> y(6, 1);
  t->evaluate(x.data(), y.data(), 6);
  const std::string path = temp_path("sharded");
  t->write_trace(path);
  const Trace trace = read_trace(path);
  for (int64_t device = 0; device < 3; ++device) {
    const int64_t compute = 2 * device, communication = 2 * device + 1;
    assert_string_equal(trace.names.at(compute).c_str(),
                        ("cpu:" + std::to_string(device) + " compute").c_str());
    assert_string_equal(trace.names.at(communication).c_str(),
                        ("cpu:" + std::to_string(device) + " communication").c_str());
    assert_int_equal(trace.count(compute, "forward"), 3 * kOps);  // two steps and the evaluation
    assert_int_equal(trace.count(compute, "backward"), 2 * kOps);
    assert_int_equal(trace.count(compute, "update"), 2);
    assert_true(trace.count(compute, "gather") >= 3 * 2);  // a bucket at least once per pass and direction
    assert_int_equal(trace.count(communication, "communication") % 2, 0);  // the same buckets each step
    assert_true(trace.count(communication, "communication") >= 2 * 2);
    // One row is one thread: its events follow one another.
    const std::vector<Event> &events = trace.rows.at(compute);
    for (size_t i = 0; i < events.size(); ++i) {
      assert_true(events[i].dur >= 0.0 && events[i].ts >= 0.0);
      if (i > 0) assert_true(events[i - 1].ts + events[i - 1].dur <= events[i].ts + 0.002);
    }
    bool named = false;
    for (const Event &e : events) named = named || e.name == "3 dense backward";
    assert_true(named);
  }
  std::remove(path.c_str());
}

// The optimizer sharded in buckets: each bucket reduce-scattered on the communication rows (half an
// all-reduce's bus bytes, NCCL's (K - 1) / K of the gradient), none all-reduced.
void test_trace_of_sharded_optimizer_buckets(void **) {
  auto t = make_trainer(dpt::ShardMode::kOptimizer, 4096);
  t->start_trace(10000);
  for (size_t s = 0; s < 2; ++s) step(*t, s);
  const std::string path = temp_path("optimizer");
  t->write_trace(path);
  const Trace trace = read_trace(path);
  for (int64_t device = 0; device < 3; ++device) {
    const int64_t communication = 2 * device + 1;
    assert_true(trace.count(communication, "communication") >= 2 * 2);
    size_t scattered = 0;
    for (const Event &e : trace.rows.at(communication)) {
      assert_null(std::strstr(e.name.c_str(), "all-reduce"));
      scattered += e.ph == "X" && e.name.rfind("reduce-scatter bucket ", 0) == 0;
    }
    assert_int_equal(scattered, trace.count(communication, "communication"));
    const dpt::ReplicaTimes m = t->replica_times(size_t(device));
    const double bus_bytes = double(t->parameter_count()) * 4.0 * 2.0 / 3.0;
    assert_true(m.communication > 0);
    assert_true(std::fabs(m.bus_bandwidth * m.communication - bus_bytes) <= 1e-6 * bus_bytes);
  }
  std::remove(path.c_str());
}

// Unsharded without buckets: the all-reduce runs on the device threads; a full row drops and says so;
// recording changes no bit.
void test_trace_of_plain_training_and_dropping(void **) {
  auto traced = make_trainer(dpt::ShardMode::kNone, 0);
  auto plain = make_trainer(dpt::ShardMode::kNone, 0);
  traced->start_trace(4);
  for (size_t s = 0; s < 2; ++s) step(*traced, s), step(*plain, s);
  assert_int_equal(traced->parameter_checksum(), plain->parameter_checksum());
  const std::string path = temp_path("plain");
  traced->write_trace(path);
  const Trace trace = read_trace(path);
  for (int64_t device = 0; device < 3; ++device) {
    const std::vector<Event> &events = trace.rows.at(2 * device);
    size_t complete = 0;
    for (const Event &e : events) complete += e.ph == "X";
    assert_int_equal(complete, 4);  // the row was full
    assert_string_equal(events.back().ph.c_str(), "i");
    assert_non_null(std::strstr(events.back().name.c_str(), "events dropped"));
  }
  traced->start_trace(1000);
  step(*traced, 2);
  traced->write_trace(path);
  const Trace again = read_trace(path);
  assert_int_equal(again.count(0, "communication"), 1);  // the all-reduce, on the device's thread
  assert_int_equal(again.count(1, "communication"), 0);
  std::remove(path.c_str());
}

// Per replica figures of the last step call: the parts add up to the call's wall time; a call that
// reduces nothing (not the last micro-batch of a window, without buckets) has no communication and no
// update; an overlapped reduction runs beside the compute.
void test_replica_times(void **) {
  for (size_t bucket_bytes : {size_t(0), size_t(4096)}) {
    dpt::TrainerConfig c;
    c.bucket_bytes = bucket_bytes;
    c.accumulation_steps = 2;
    dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), model(), c);
    const dpt::ReplicaTimes before = t.replica_times(2);
    assert_true(before.compute == 0 && before.communication == 0 && before.idle == 0);
    dpt_test::TestRng rng(4);
    const std::vector<float> x = rng.vector(12 * 64, -1.0f, 1.0f);
    std::vector<int32_t> y(12, 2);
    const dpt::StepStats first = t.step(x.data(), y.data(), 12);  // the window's first micro-batch
    for (size_t r = 0; r < 3; ++r) {
      const dpt::ReplicaTimes m = t.replica_times(r);
      assert_true(m.compute > 0 && m.communication == 0 && m.update == 0 && m.bus_bandwidth == 0);
      assert_true(std::fabs(m.compute + m.idle - first.total_seconds) <= 1e-9 * first.total_seconds + 1e-12);
    }
    const dpt::StepStats last = t.step(x.data(), y.data(), 12);
    assert_true(last.applied);
    for (size_t r = 0; r < 3; ++r) {
      const dpt::ReplicaTimes m = t.replica_times(r);
      assert_true(m.compute > 0 && m.communication > 0 && m.update > 0 && m.idle >= 0);
      // NCCL's count for an all-reduce on K = 3: 2 (K - 1) / K of the float32 gradient's bytes.
      const double bus_bytes = double(t.parameter_count()) * 4.0 * 4.0 / 3.0;
      assert_true(std::fabs(m.bus_bandwidth * m.communication - bus_bytes) <= 1e-6 * bus_bytes);
      const double busy = m.compute + m.update + (bucket_bytes > 0 ? 0.0 : m.communication);
      assert_true(busy <= last.total_seconds);
      assert_true(std::fabs(busy + m.idle - last.total_seconds) <= 1e-9 * last.total_seconds + 1e-12);
    }
  }
  auto t = make_trainer(dpt::ShardMode::kNone, 0);
  dpt_test::expect_error([&] { t->replica_times(3); }, DPT_ERROR_OUT_OF_RANGE, "replica 3 of 3");
}

// The totals: each figure the sum of the step calls' in order (the very additions), the bus bandwidth the
// bytes of every reduction over their seconds; evaluation adds nothing; 0 before the first step.
void test_replica_totals(void **) {
  dpt::TrainerConfig c;
  c.accumulation_steps = 2;
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), model(), c);
  const dpt::ReplicaTimes none = t.replica_totals(1);
  assert_true(none.compute == 0 && none.communication == 0 && none.update == 0 && none.idle == 0 &&
              none.bus_bandwidth == 0);
  dpt_test::TestRng rng(5);
  const std::vector<float> x = rng.vector(12 * 64, -1.0f, 1.0f);
  std::vector<int32_t> y(12, 1);
  std::vector<dpt::ReplicaTimes> sum(3);
  std::vector<double> bytes(3, 0.0), seconds(3, 0.0);
  for (int s = 0; s < 5; ++s) {
    t.step(x.data(), y.data(), 12 - size_t(s));
    for (size_t r = 0; r < 3; ++r) {
      const dpt::ReplicaTimes m = t.replica_times(r);
      sum[r].compute += m.compute, sum[r].communication += m.communication, sum[r].update += m.update,
          sum[r].idle += m.idle;
      bytes[r] += m.bus_bandwidth * m.communication, seconds[r] += m.communication;
    }
  }
  t.evaluate(x.data(), y.data(), 12);
  for (size_t r = 0; r < 3; ++r) {
    const dpt::ReplicaTimes total = t.replica_totals(r);
    assert_true(total.compute == sum[r].compute && total.communication == sum[r].communication &&
                total.update == sum[r].update && total.idle == sum[r].idle);
    assert_true(total.communication > 0 && total.update > 0);
    assert_true(std::fabs(total.bus_bandwidth - bytes[r] / seconds[r]) <= 1e-9 * total.bus_bandwidth);
  }
  dpt_test::expect_error([&] { t.replica_totals(3); }, DPT_ERROR_OUT_OF_RANGE, "replica 3 of 3");
}

void test_trace_misuse(void **) {
  auto t = make_trainer(dpt::ShardMode::kNone, 0);
  dpt_test::expect_error([&] { t->write_trace(temp_path("never")); }, DPT_ERROR_INVALID_STATE, "not started");
  dpt_test::expect_error([&] { t->start_trace(0); }, DPT_ERROR_INVALID_ARGUMENT, "no room");
  dpt_test::expect_error([&] { t->start_trace((size_t(1) << 24) + 1); }, DPT_ERROR_OUT_OF_RANGE, "too many");
  t->start_trace(10);
  dpt_test::expect_error([&] { t->write_trace("/nonexistent-dir/trace.json"); }, DPT_ERROR_IO, "unwritable");
  // The failed write stopped the recording; the trainer trains on.
  dpt_test::expect_error([&] { t->write_trace(temp_path("after")); }, DPT_ERROR_INVALID_STATE, "stopped");
  step(*t, 0);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_of_sharded_training),
      cmocka_unit_test(test_trace_of_sharded_optimizer_buckets),
      cmocka_unit_test(test_trace_of_plain_training_and_dropping),
      cmocka_unit_test(test_replica_times),
      cmocka_unit_test(test_replica_totals),
      cmocka_unit_test(test_trace_misuse),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
