/**
 * @file device.h
 * @brief Contexts and device discovery.
 *
 * A context owns the devices of this process that dptrain may use. Each CPU device is a worker
 * thread with its own memory arena (optionally capped, so that it can run out of memory like a GPU).
 *
 * Threading: one handle is used by one thread at a time; distinct handles are independent.
 * Trainers that share a context may be used from different threads: their device work is
 * serialized by the context.
 */
#ifndef DPTRAIN_DEVICE_H
#define DPTRAIN_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

DPT_EXTERN_C_BEGIN

/** @brief Opaque context: the devices dptrain may use. */
typedef struct dpt_context dpt_context;

/** @brief Largest number of CPU devices a context can have. */
#define DPT_MAX_CPU_DEVICES 64

/** @brief Options for dpt_context_create(). Fill with dpt_context_options_init() first. */
typedef struct dpt_context_options {
  size_t struct_size; /**< Set by dpt_context_options_init(); the library reads only this many bytes. */
  size_t cpu_devices; /**< Number of CPU devices; 0 = environment DPTRAIN_CPU_DEVICES, else the core count. */
  uint64_t cpu_memory_limit; /**< Capacity of each CPU device's arena in bytes; 0 = unlimited. */
} dpt_context_options;

/** @brief Kind of a device. */
typedef enum dpt_device_kind {
  DPT_DEVICE_CPU = 1, /**< A CPU device: a worker thread with its own memory arena. */
  DPT_DEVICE_CUDA = 2 /**< An NVIDIA GPU (not available in this version). */
} dpt_device_kind;

/** @brief Description of one device. The caller sets struct_size = sizeof(dpt_device_info). */
typedef struct dpt_device_info {
  size_t struct_size;    /**< Set by the caller; the library writes only this many bytes. */
  dpt_device_kind kind;  /**< CPU or CUDA. */
  size_t ordinal;        /**< Index of the device among the devices of its kind. */
  char name[64];         /**< NUL-terminated name, e.g. "cpu:0". */
  uint64_t total_memory; /**< Bytes the device can hold: its arena cap, or the host's memory when uncapped. */
  uint64_t memory_limit; /**< Arena cap in bytes; 0 = unlimited. */
  uint64_t memory_in_use; /**< Bytes currently allocated on the device. */
} dpt_device_info;

/** @brief Fills @p options with defaults (struct_size set, everything else 0). NULL is ignored. */
DPT_API void dpt_context_options_init(dpt_context_options *options);

/**
 * @brief Creates a context and discovers its devices.
 * @param out receives the context; untouched on failure.
 * @param options NULL for defaults.
 * @return DPT_ERROR_OUT_OF_RANGE when cpu_devices (or DPTRAIN_CPU_DEVICES) exceeds DPT_MAX_CPU_DEVICES,
 *         DPT_ERROR_INVALID_ARGUMENT when DPTRAIN_CPU_DEVICES is not a positive integer.
 */
DPT_API dpt_status dpt_context_create(dpt_context **out, const dpt_context_options *options);

/** @brief Destroys a context. Accepts NULL. Every trainer created on it must be destroyed first. */
DPT_API void dpt_context_destroy(dpt_context *context);

/** @brief Number of devices of the context, CPU and CUDA together, in the order of their indices. */
DPT_API dpt_status dpt_device_count(const dpt_context *context, size_t *count);

/**
 * @brief Describes device @p index (0 .. count-1).
 * @param info caller-owned; info->struct_size must be set to sizeof(dpt_device_info).
 */
DPT_API dpt_status dpt_device_get_info(const dpt_context *context, size_t index, dpt_device_info *info);

DPT_EXTERN_C_END

#endif /* DPTRAIN_DEVICE_H */
