// The opaque handles of the C API and the C++ objects behind them.
#pragma once

#include <dptrain/dptrain.h>

#include <memory>

#include "backend/context.hpp"
#include "data/dataset.hpp"
#include "nn/model_spec.hpp"
#include "parallel/trainer.hpp"

// A trainer shares ownership of its context's devices, so the two may be destroyed in either order.
struct dpt_context {
  std::shared_ptr<dpt::Context> impl;
};

struct dpt_model {
  dpt::ModelSpec impl;
};

struct dpt_dataset {
  dpt::Dataset impl;
};

struct dpt_trainer {
  std::unique_ptr<dpt::Trainer> impl;
};
