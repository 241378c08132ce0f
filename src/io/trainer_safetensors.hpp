// A trainer's weights as named tensors in a safetensors file (io/safetensors.hpp), so that they move to and
// from PyTorch by name: every parameter and buffer of the model under its name (named_parameters,
// named_buffers: "conv1.weight", "bn1.running_mean"), in its shape, F32. The rules: docs/safetensors.md.
#pragma once

#include <string>

#include "parallel/trainer.hpp"

namespace dpt {

// Writes every parameter and buffer (F32), and "<node>.num_batches_tracked" (I64, shape []) for each
// batch_norm node, with the optimizer step count, so that torch's load_state_dict(strict=True) takes the
// file; __metadata__ {"format": "pt", "dptrain.model": <describe()>}. Atomic (file_io::write_file_atomic).
void save_safetensors(const Trainer &trainer, const std::string &path);

// Sets the parameters and buffers of every replica by name from the file; the optimizer state, counters and
// seed are untouched. Every parameter and buffer of the model must be there in its shape, as F32, F64, F16
// or BF16 (widened or rounded to F32), every value finite; "<node>.num_batches_tracked" of a batch_norm
// node (an integer scalar) is ignored, any other tensor refused. Everything is checked before anything
// changes: on error the trainer is untouched. DPT_ERROR_IO when the file cannot be read or is not a
// regular file; DPT_ERROR_FORMAT for a file that is not valid safetensors or holds a NaN or an infinity;
// DPT_ERROR_INVALID_ARGUMENT for a valid file that does not fit the model (missing, extra, misshapen
// tensors, or another dtype), naming the tensors.
void load_safetensors(Trainer &trainer, const std::string &path);

}  // namespace dpt
