/**
 * @file checkpoint.h
 * @brief Checkpoints: save a trainer's state atomically, load it into a trainer on any devices; weights as
 *        named tensors in safetensors files, to and from PyTorch.
 *
 * A checkpoint holds the parameters, the optimizer state, the step and epoch counters, the seed (all
 * randomness is derived from it and the counters) and the model description; it does not depend on the
 * number or kind of devices. The format is specified in docs/checkpoint-format.md.
 */
#ifndef DPTRAIN_CHECKPOINT_H
#define DPTRAIN_CHECKPOINT_H

#include "export.h"
#include "status.h"
#include "trainer.h"

DPT_EXTERN_C_BEGIN

/**
 * @brief Saves the trainer's state to @p path atomically.
 *
 * Writes a temporary file in the same directory (PATH.tmp-PID-N), fsyncs it, renames it over @p path
 * and fsyncs the directory (on Windows: flushes it and moves it over @p path with MoveFileExW,
 * MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH): after a crash at any moment @p path holds either
 * the previous checkpoint or the new one, complete. After a successful save, the temporary files of
 * @p path that killed saves left behind (those whose process is gone) are removed; those of running
 * processes are kept.
 * dpt_trainer_fit() saves nothing by itself; call this from its progress callback: after an epoch, or
 * from a batch report (between optimizer steps: not inside an accumulation window), when the file also
 * records how far into the epoch the trainer is, and dpt_trainer_fit() after dpt_trainer_load() goes on
 * from the next batch.
 * Across MPI processes a trainer whose optimizer state is sharded across every process's devices
 * (dpt_trainer_options.shard_scope = DPT_SHARD_SCOPE_WORLD) makes this call collective: every process calls
 * it (each gives its part of the state), and process 0 alone writes @p path; otherwise the caller writes it
 * (an MPI program calls it on process 0).
 * @return DPT_ERROR_IO (naming the failed operation) when the file cannot be written; the previous file
 *         is then unchanged. DPT_ERROR_INVALID_STATE inside an unfinished accumulation window.
 */
DPT_API dpt_status dpt_trainer_save(dpt_trainer *trainer, const char *path);

/**
 * @brief Loads a checkpoint into a trainer created with the same model and optimizer kind.
 *
 * Any device count and backend may load it. The trainer's seed, step and epoch counters are replaced by
 * the checkpoint's, so a following dpt_trainer_fit() continues exactly where the saved run stopped. The
 * whole file is validated before anything changes: on error the trainer is untouched and usable. Only a
 * regular file is read (a FIFO, a directory or a device is refused at once, without blocking), and its
 * header and tensor table are checked before the rest is read, so a large file that is no checkpoint is
 * refused without being read. Parameters and optimizer state must be finite. A trainer whose parameters
 * are sharded across every process's devices (DPT_SHARD_PARAMETERS with DPT_SHARD_SCOPE_WORLD) makes this
 * call collective: every process loads the file (each keeps its ranges) and waits for the others.
 * @return DPT_ERROR_IO when the file cannot be read or is not a regular file ("'x' is not a regular file
 *         (a FIFO)"); DPT_ERROR_FORMAT for a corrupt, truncated or foreign file, or one whose parameters or
 *         optimizer state hold a NaN or an infinity (the message names the first, e.g.
 *         "model.parameters[1234] is NaN") or, for AdamW, a negative second moment;
 *         DPT_ERROR_UNSUPPORTED for a newer format version; DPT_ERROR_INVALID_ARGUMENT when the
 *         checkpoint belongs to another model or optimizer.
 */
DPT_API dpt_status dpt_trainer_load(dpt_trainer *trainer, const char *path);

/** @brief Epochs completed by dpt_trainer_fit() so far (restored by dpt_trainer_load()). */
DPT_API dpt_status dpt_trainer_epoch_count(const dpt_trainer *trainer, uint64_t *epochs);

/** @brief Optimizer steps taken so far (restored by dpt_trainer_load()). */
DPT_API dpt_status dpt_trainer_step_count(const dpt_trainer *trainer, uint64_t *steps);

/* ---- Weights as named tensors: safetensors (0.2) -------------------------------------------------- */

/**
 * @brief Writes the trainer's weights to @p path as a safetensors file, the format PyTorch reads with
 *        safetensors.torch.load_file().
 *
 * Every parameter and buffer (running statistics) of the model, as F32, under its name and in its shape
 * ("conv1.weight" [64, 1, 3, 3], "bn1.running_mean" [64], "fc.bias" [10]: the names of the model's nodes,
 * torchvision's names for the built-in "resnet18"), and for each batch_norm node "<node>.num_batches_tracked"
 * (I64, shape [], the optimizer step count), so that torch's load_state_dict(strict=True) accepts the file
 * for a module with the same names. __metadata__ is {"format": "pt", "dptrain.model": <the model's
 * description>}. Only weights: no optimizer state, counters or seed (dpt_trainer_save() keeps those).
 * Written atomically as dpt_trainer_save() writes (a temporary file renamed over @p path). The format and
 * the rules: docs/safetensors.md.
 * @return DPT_ERROR_IO (naming the failed operation) when the file cannot be written; the previous file is
 *         then unchanged. DPT_ERROR_INVALID_ARGUMENT when two tensors would have the same name or a name
 *         is not UTF-8.
 */
DPT_API dpt_status dpt_trainer_save_safetensors(dpt_trainer *trainer, const char *path);

/**
 * @brief Sets the trainer's parameters and buffers, on every replica, by name from a safetensors file
 *        (as safetensors.torch.save_file(module.state_dict(), path) writes it, or
 *        dpt_trainer_save_safetensors()).
 *
 * Every parameter and buffer of the model must be in the file with its exact shape, as F32, or F64, F16 or
 * BF16 (converted to F32: F64 rounded to nearest, the others exactly); every value finite. Of the tensors
 * the model does not have, "<node>.num_batches_tracked" of a batch_norm node (an integer scalar, PyTorch's
 * BatchNorm counter) is ignored; any other is refused. __metadata__ is not read. The optimizer state, the
 * step and epoch counters and the seed are untouched (as with dpt_trainer_set_parameters()). Only a regular
 * file is read (a FIFO is refused at once, without blocking); its 8-byte header length and its JSON header
 * are checked before the data are read, and nothing larger than the header or the model is allocated.
 * The whole file is validated before anything changes: on error the trainer is untouched and usable.
 * @return DPT_ERROR_IO when the file cannot be read or is not a regular file; DPT_ERROR_FORMAT for a file
 *         that is not valid safetensors (header length, JSON, dtypes, offsets, sizes; the message says
 *         what) or that holds a NaN or an infinity for the model ("...: bn1.running_var[3] is NaN");
 *         DPT_ERROR_INVALID_ARGUMENT for a valid file that does not fit the model: tensors missing or
 *         extra (the message names them), another shape or an unsupported dtype (naming the tensor).
 */
DPT_API dpt_status dpt_trainer_load_safetensors(dpt_trainer *trainer, const char *path);

DPT_EXTERN_C_END

#endif /* DPTRAIN_CHECKPOINT_H */
