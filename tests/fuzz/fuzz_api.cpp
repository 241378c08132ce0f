// Fuzz target: sequences of C API calls, decoded from the input bytes (one opcode byte, then its arguments).
// Valid and invalid arguments alike must give a status, never a crash or a hang; every failure must come
// with a one-line message; the handles must stay usable.
#include <dptrain/dptrain.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

class Bytes {
 public:
  Bytes(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  float real() { return (float(next()) - 128.0f) / 32.0f; }

 private:
  const uint8_t *data_;
  size_t size_, pos_ = 0;
};

void check(dpt_status s) {
  if (s == DPT_OK) return;
  const char *m = dpt_last_error_message();
  if (m == nullptr || m[0] == '\0' || std::strchr(m, '\n') != nullptr) __builtin_trap();
}

struct State {
  dpt_context *context = nullptr;
  dpt_model *model = nullptr;
  dpt_trainer *trainer = nullptr;
  std::vector<float> x;
  std::vector<int32_t> y;
  ~State() {
    dpt_trainer_destroy(trainer);
    dpt_model_destroy(model);
    dpt_context_destroy(context);
  }
  size_t input_size() const {
    size_t n = 0;
    return model != nullptr && dpt_model_input_size(model, &n) == DPT_OK ? n : 0;
  }
};

void fill_batch(State &s, Bytes &in, size_t batch, size_t per) {
  s.x.assign(batch * per, 0.0f);
  s.y.assign(batch, 0);
  for (float &v : s.x) v = in.real();
  for (int32_t &v : s.y) v = int32_t(in.next() % 12) - 1;  // sometimes out of range
}

void create_trainer(State &s, Bytes &in) {
  dpt_trainer_destroy(s.trainer);
  s.trainer = nullptr;
  if (s.model == nullptr) return;
  static const size_t devices[] = {1, 0};
  static const float weights[] = {1.0f, 2.5f};
  dpt_trainer_options t;
  dpt_trainer_options_init(&t);
  t.split = dpt_split_policy(in.next() % 4);
  t.split_weights = weights;
  t.devices = in.next() % 2 ? devices : nullptr;
  t.device_count = t.devices ? 2 : 0;
  t.allreduce = dpt_allreduce_algorithm(in.next() % 3);
  t.accumulation_steps = in.next() % 3;
  t.init = dpt_init_scheme(in.next() % 3);
  t.nonfinite = dpt_nonfinite_policy(in.next() % 3);
  t.seed = in.next();
  dpt_optimizer_options o;
  dpt_optimizer_options_init(&o);
  o.kind = dpt_optimizer_kind(in.next() % 3);
  o.learning_rate = in.real();
  o.momentum = float(in.next()) / 250.0f;
  o.nesterov = in.next() % 2;
  o.weight_decay = float(in.next()) / 1000.0f;
  o.schedule = dpt_schedule_kind(in.next() % 4);
  o.warmup_steps = in.next() % 4;
  o.step_size = in.next() % 4;
  o.total_steps = in.next() % 8;
  o.clip_norm = float(in.next()) / 64.0f;
  check(dpt_trainer_create(&s.trainer, s.context, s.model, &t, &o));
}

void run(State &s, Bytes &in) {
  const uint8_t op = in.next() % 15;
  switch (op) {
    case 0: {
      dpt_model_destroy(s.model);
      s.model = nullptr;
      check(dpt_model_create(&s.model, in.next() % 4, in.next() % 9, in.next() % 9));
      break;
    }
    case 1:
      check(dpt_model_add_dense(s.model, in.next() % 20));
      break;
    case 2:
      check(dpt_model_add_conv2d(s.model, in.next() % 5, in.next() % 5, in.next() % 3, in.next() % 3));
      break;
    case 3:
      check(dpt_model_add_pool(s.model, dpt_pool_kind(in.next() % 3), in.next() % 4, in.next() % 3));
      break;
    case 4:
      check(dpt_model_add_activation(s.model, dpt_activation(in.next() % 4)));
      break;
    case 5:
      check(dpt_model_add_flatten(s.model));
      break;
    case 6:
      check(dpt_model_add_dropout(s.model, float(in.next()) / 200.0f - 0.1f));
      break;
    case 7:
      create_trainer(s, in);
      break;
    case 8: {
      const size_t batch = in.next() % 9, per = s.input_size();
      fill_batch(s, in, batch, per);
      dpt_step_result r;
      r.struct_size = in.next() % 8 ? sizeof r : 0;
      const size_t count = s.x.size() + (in.next() % 5 == 0);  // sometimes the wrong length
      check(dpt_trainer_step(s.trainer, s.x.data(), count, s.y.data(), batch, &r));
      break;
    }
    case 9: {
      const size_t n = in.next() % 9, per = s.input_size();
      fill_batch(s, in, n, per);
      dpt_eval_result r;
      r.struct_size = sizeof r;
      check(dpt_trainer_evaluate(s.trainer, s.x.data(), s.x.size(), s.y.data(), n, &r));
      if (r.samples == n && n > 0 && (r.accuracy < 0 || r.accuracy > 1)) __builtin_trap();
      break;
    }
    case 10: {
      const size_t n = in.next() % 6, per = s.input_size();
      fill_batch(s, in, n, per);
      size_t classes = 0;
      if (s.model) dpt_model_output_size(s.model, &classes);
      std::vector<float> logits(n * classes + in.next() % 2);
      check(dpt_trainer_predict(s.trainer, s.x.data(), s.x.size(), n, logits.data(), logits.size()));
      break;
    }
    case 11: {
      size_t n = 0;
      if (dpt_trainer_parameter_count(s.trainer, &n) != DPT_OK) break;
      std::vector<float> p(n + in.next() % 2);
      check(dpt_trainer_get_parameters(s.trainer, p.data(), p.size()));
      for (float &v : p) v += in.real() * 0.01f;
      check(dpt_trainer_set_parameters(s.trainer, p.data(), p.size()));
      check(dpt_trainer_get_replica_parameters(s.trainer, in.next() % 3, p.data(), p.size()));
      break;
    }
    case 12: {
      const int fd = memfd_create("ckpt", 0);
      if (fd < 0) break;
      const std::string path = "/proc/self/fd/" + std::to_string(fd);
      check(dpt_trainer_load(s.trainer, path.c_str()));  // empty file: must be rejected
      close(fd);
      break;
    }
    case 13: {
      const size_t n = 1 + in.next() % 20, per = s.input_size();
      if (per == 0) break;
      fill_batch(s, in, n, per);
      for (int32_t &v : s.y) v = v < 0 ? 0 : v;
      dpt_dataset *d = nullptr;
      size_t dims[3] = {1, 1, per};
      check(dpt_dataset_create(&d, s.x.data(), s.x.size(), s.y.data(), n, dims[0], dims[1], dims[2], 12));
      dpt_fit_options f;
      dpt_fit_options_init(&f);
      f.batch_size = in.next() % 7;
      f.epochs = in.next() % 2;
      dpt_fit_result r;
      r.struct_size = sizeof r;
      check(dpt_trainer_fit(s.trainer, d, d, &f, &r));
      dpt_dataset_destroy(d);
      break;
    }
    default: {
      size_t k = 0;
      if (dpt_trainer_device_count(s.trainer, &k) != DPT_OK) break;
      std::vector<size_t> counts(k + in.next() % 2);
      check(dpt_trainer_split_sizes(s.trainer, in.next(), counts.data(), counts.size()));
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in(data, size);
  State s;
  dpt_context_options o;
  dpt_context_options_init(&o);
  o.cpu_devices = 2;
  o.cpu_memory_limit = 64u << 20;  // a bound: an absurd model fails with out-of-memory, not by swapping
  check(dpt_context_create(&s.context, &o));
  for (int ops = 0; ops < 64 && !in.empty(); ++ops) run(s, in);
  return 0;
}
