// Trainer checkpoints: what a trainer must keep to resume exactly (docs/checkpoint-format.md), written
// atomically and validated strictly on load. Independent of the number and kind of devices.
#pragma once

#include <string>
#include <vector>

#include "parallel/trainer.hpp"

namespace dpt {

// Largest checkpoint file accepted (a corrupt size field must not make us read gigabytes).
constexpr uint64_t kMaxCheckpointBytes = uint64_t(16) << 30;

void save_checkpoint(const Trainer &trainer, const std::string &path);

// Validates the file completely before changing anything: on error the trainer is untouched. Only a
// regular file is opened (DPT_ERROR_IO otherwise); its header, then its tensor table, are checked before
// the rest is read, so a large file that is no checkpoint is refused without being read. Non-finite
// parameters or optimizer state (and negative AdamW second moments) are DPT_ERROR_FORMAT.
void load_checkpoint(Trainer &trainer, const std::string &path);

// The same for a file image already in memory (path only names it in messages).
void load_checkpoint_image(Trainer &trainer, const std::vector<unsigned char> &image,
                           const std::string &path);

}  // namespace dpt
