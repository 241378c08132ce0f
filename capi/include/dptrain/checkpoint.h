/**
 * @file checkpoint.h
 * @brief Checkpoints: save a trainer's state atomically, load it into a trainer on any devices.
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
 * Writes a temporary file in the same directory (PATH.tmp-<pid>-<n>), fsyncs it, renames it over @p path
 * and fsyncs the directory: after a crash at any moment @p path holds either the previous checkpoint or
 * the new one, complete. After a successful save, the temporary files of @p path that killed saves left
 * behind (those whose process is gone) are removed; those of running processes are kept.
 * dpt_trainer_fit() saves nothing by itself; call this from the epoch progress callback.
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
 * refused without being read. Parameters and optimizer state must be finite.
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

DPT_EXTERN_C_END

#endif /* DPTRAIN_CHECKPOINT_H */
