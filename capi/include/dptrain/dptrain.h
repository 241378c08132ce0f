/**
 * @file dptrain.h
 * @brief Umbrella header of dptrain: data-parallel training of neural networks across devices.
 *
 * Conventions: functions read dpt_<object>_<verb>; constructors take `dpt_x **out` first and leave it
 * untouched on failure; destructors accept NULL; every fallible call returns a dpt_status and sets a
 * thread-local message (dpt_last_error_message()). Options structs start with struct_size and are filled
 * by their _init function; result structs start with struct_size, set by the caller.
 */
#ifndef DPTRAIN_DPTRAIN_H
#define DPTRAIN_DPTRAIN_H

#include "checkpoint.h"
#include "dataset.h"
#include "device.h"
#include "export.h"
#include "model.h"
#include "status.h"
#include "trainer.h"
#include "version.h"
#include "world.h"

#endif /* DPTRAIN_DPTRAIN_H */
