// The opaque handles of the C API and the C++ objects behind them.
#pragma once

#include <dptrain/dptrain.h>

#include <memory>

#include "backend/context.hpp"
#include "call_guard.hpp"
#include "data/dataset.hpp"
#include "graph/model_spec.hpp"
#include "parallel/trainer.hpp"

// A trainer shares ownership of its context's devices, so the two may be destroyed in either order.
struct dpt_context {
  std::shared_ptr<dpt::Context> impl;
};

// Builders are exclusive, queries and dpt_trainer_create may share the model.
struct dpt_model {
  dpt::ModelSpec impl;
  mutable dpt::capi::CallGuard calls;
};

struct dpt_dataset {
  dpt::Dataset impl;
};

// Every call that runs devices or changes the trainer is exclusive; counters and sizes may be read by
// several threads at once.
struct dpt_trainer {
  std::unique_ptr<dpt::Trainer> impl;
  mutable dpt::capi::CallGuard calls;
};

namespace dpt::capi {
inline CallGuard::Scope exclusive(const dpt_trainer *t) {
  return t->calls.enter(CallGuard::Mode::kExclusive, "trainer");
}
inline CallGuard::Scope shared(const dpt_trainer *t) {
  return t->calls.enter(CallGuard::Mode::kShared, "trainer");
}
inline CallGuard::Scope exclusive(const dpt_model *m) {
  return m->calls.enter(CallGuard::Mode::kExclusive, "model");
}
inline CallGuard::Scope shared(const dpt_model *m) {
  return m->calls.enter(CallGuard::Mode::kShared, "model");
}
}  // namespace dpt::capi
