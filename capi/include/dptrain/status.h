/**
 * @file status.h
 * @brief Status codes returned by every fallible call, and the per-thread error message.
 *
 * Values are pinned forever. The thousands digit is the category: 1000s invalid argument,
 * 2000s unsupported, 3000s device, 4000s communication, 5000s I/O and format, 9000s internal.
 */
#ifndef DPTRAIN_STATUS_H
#define DPTRAIN_STATUS_H

#include "export.h"

DPT_EXTERN_C_BEGIN

/** @brief Result of a library call. DPT_OK is zero; every error is positive. */
typedef enum dpt_status {
  DPT_OK = 0,                        /**< Success. */
  DPT_ERROR_INVALID_ARGUMENT = 1000, /**< An argument has a value the call does not accept. */
  DPT_ERROR_NULL_POINTER = 1001,     /**< A required handle or pointer is NULL. */
  DPT_ERROR_OUT_OF_RANGE = 1002,     /**< An index, label or count lies outside its valid range. */
  DPT_ERROR_SIZE_MISMATCH = 1003,    /**< A buffer length does not match the shape the call expects. */
  DPT_ERROR_INVALID_STATE = 1004,    /**< The object is not in a state that allows this call. */
  DPT_ERROR_BUFFER_TOO_SMALL = 1005, /**< An output buffer is too small; the needed size is reported. */
  DPT_ERROR_NON_FINITE = 1006,       /**< A NaN or infinity in inputs, loss or gradients (policy "error"). */
  DPT_ERROR_BUSY = 1007,             /**< Another thread is in a call on this handle; nothing was done. */
  DPT_ERROR_UNSUPPORTED = 2000,      /**< The operation or configuration is not supported. */
  DPT_ERROR_DEVICE = 3000,           /**< A device failed. */
  DPT_ERROR_OUT_OF_MEMORY = 3001,    /**< A device (or the host) ran out of memory. */
  DPT_ERROR_DEVICE_NOT_FOUND = 3002, /**< A requested device does not exist. */
  DPT_ERROR_COMMUNICATION = 4000,    /**< A collective operation failed. */
  DPT_ERROR_TIMEOUT = 4001,          /**< An operation did not complete in time. */
  DPT_ERROR_IO = 5000,               /**< A file could not be opened, read or written. */
  DPT_ERROR_FORMAT = 5001,           /**< A file or buffer has invalid content. */
  DPT_ERROR_INTERNAL = 9000          /**< A bug in dptrain; please report it with the message. */
} dpt_status;

/** @brief Static, human-readable name of a status, e.g. "invalid argument". Never NULL. */
DPT_API const char *dpt_status_string(dpt_status status);

/** @brief The category of a status: its value rounded down to a multiple of 1000 (0 for DPT_OK and negative
 * values). */
DPT_API int dpt_status_category(dpt_status status);

/**
 * @brief One-line detail of the most recent failed call on the calling thread.
 *
 * Thread-local; valid until the next dptrain call on this thread. Never NULL: an empty string when
 * no call has failed on this thread. Successful calls leave it unchanged.
 */
DPT_API const char *dpt_last_error_message(void);

DPT_EXTERN_C_END

#endif /* DPTRAIN_STATUS_H */
