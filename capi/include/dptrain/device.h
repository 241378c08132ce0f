/**
 * @file device.h
 * @brief Contexts and device discovery.
 *
 * A context owns the devices of this process that dptrain may use. Each CPU device is a worker
 * thread with its own memory arena (optionally capped, so that it can run out of memory like a GPU).
 *
 * CUDA devices (NVIDIA GPUs) come from the loadable module libdptrain_cuda.so, which a context opens only
 * when dpt_context_options.device_selection asks for CUDA devices. It is looked for in each directory of
 * the environment variable DPTRAIN_BACKEND_PATH (colon-separated) when that is set, otherwise next to
 * libdptrain.so. A missing module, missing CUDA libraries, a missing driver or no GPU simply mean zero CUDA
 * devices; dpt_backend_get_info() says why. A trainer runs on CPU devices or on CUDA devices, not on a mix
 * (see dpt_trainer_options.devices; docs/cuda.md).
 *
 * Threading: distinct handles are independent. A context has no calls that change it: any number of
 * threads may query it and create trainers on it at once, and trainers that share a context may be used
 * from different threads (their device work is serialized by the context). A trainer or a model is used by
 * one thread at a time; an overlapping call from a second thread returns DPT_ERROR_BUSY (trainer.h,
 * model.h).
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

/** @brief Which kinds of devices dpt_context_create() discovers. */
typedef enum dpt_device_selection {
  DPT_DEVICES_CPU = 0,  /**< CPU devices only (the default): the CUDA module is never loaded. */
  DPT_DEVICES_CUDA = 1, /**< CUDA devices only; none when the CUDA backend is unavailable. */
  DPT_DEVICES_ALL = 2   /**< CPU devices first, then CUDA devices. */
} dpt_device_selection;

/** @brief Options for dpt_context_create(). Fill with dpt_context_options_init() first. */
typedef struct dpt_context_options {
  size_t struct_size; /**< Set by dpt_context_options_init(); the library reads only this many bytes. */
  size_t cpu_devices; /**< Number of CPU devices; 0 = environment DPTRAIN_CPU_DEVICES, else the core count. */
  uint64_t cpu_memory_limit; /**< Capacity of each CPU device's arena in bytes; 0 = unlimited. */
  /** Kinds of devices to discover; default DPT_DEVICES_CPU. Appended after 0.1: a caller whose struct_size
   *  ends before it gets the default. */
  dpt_device_selection device_selection;
} dpt_context_options;

/** @brief Kind of a device. */
typedef enum dpt_device_kind {
  DPT_DEVICE_CPU = 1, /**< A CPU device: a worker thread with its own memory arena. */
  DPT_DEVICE_CUDA = 2 /**< An NVIDIA GPU of the CUDA module: trainers run on it (docs/cuda.md). */
} dpt_device_kind;

/**
 * @brief Description of one device. The caller sets struct_size = sizeof(dpt_device_info).
 *
 * The fields after memory_in_use were appended after 0.1; a caller whose struct_size ends before them
 * does not get them (and nothing is written there).
 */
typedef struct dpt_device_info {
  size_t struct_size;   /**< Set by the caller; the library writes only this many bytes. */
  dpt_device_kind kind; /**< CPU or CUDA. */
  /** Index of the device among the devices of its kind (for a CUDA device: its CUDA ordinal). */
  size_t ordinal;
  char name[64]; /**< NUL-terminated name, e.g. "cpu:0" or "cuda:0". */
  /** Bytes the device can hold: its arena cap, the host's memory when uncapped, or the GPU's memory. */
  uint64_t total_memory;
  uint64_t memory_limit;  /**< Arena cap in bytes; 0 = unlimited. */
  uint64_t memory_in_use; /**< Bytes currently allocated on the device by dptrain. */
  /** Bytes free now: the GPU's (cudaMemGetInfo, measured at each call), or total_memory - memory_in_use. */
  uint64_t free_memory;
  int32_t compute_capability_major; /**< CUDA compute capability, e.g. 9 for 9.0; 0 for a CPU device. */
  int32_t compute_capability_minor; /**< e.g. 0 for 9.0; 0 for a CPU device. */
  int32_t multiprocessor_count;     /**< Streaming multiprocessors of a GPU; 0 for a CPU device. */
  /** NUL-terminated PCI bus id of a GPU, e.g. "0000:19:00.0"; empty for a CPU device. */
  char pci_bus_id[32];
  /** NUL-terminated product name of a GPU, e.g. "NVIDIA H200"; empty for a CPU device. */
  char product_name[128];
} dpt_device_info;

/** @brief How the backend of one kind of device fared in a context. Set struct_size = sizeof first. */
typedef struct dpt_backend_info {
  size_t struct_size;   /**< Set by the caller; the library writes only this many bytes. */
  size_t device_count;  /**< Devices of this kind in the context. */
  dpt_device_kind kind; /**< The kind asked about. */
  int32_t requested;    /**< 1 when the context's device_selection asked for devices of this kind. */
  /** 1 when the backend is present (CPU: always; CUDA: the module loaded and its interface is supported). */
  int32_t loaded;
  int32_t driver_version;  /**< CUDA driver version (1000 * major + 10 * minor); 0 = none or not CUDA. */
  int32_t runtime_version; /**< CUDA runtime version of the module, same encoding; 0 = not loaded. */
  char module_path[512];   /**< NUL-terminated path of the loaded module; empty when none. */
  /** NUL-terminated, one line: why device_count is 0 (or why a device was skipped), e.g.
   *  "CUDA driver not found (cudaGetDeviceCount: error 35, ...)"; empty when all is well. */
  char reason[512];
  /** NUL-terminated versions of the runtime, driver and libraries, e.g.
   *  "CUDA runtime 13.0, driver none, cuBLAS 13.1.0, cuDNN 9.19.0, NCCL 2.28.9"; empty when not loaded. */
  char versions[256];
} dpt_backend_info;

/** @brief Fills @p options with defaults (struct_size set, everything else 0, so device_selection is
 * DPT_DEVICES_CPU). NULL is ignored. */
DPT_API void dpt_context_options_init(dpt_context_options *options);

/**
 * @brief Creates a context and discovers its devices.
 * @param out receives the context; untouched on failure.
 * @param options NULL for defaults.
 * @return DPT_ERROR_OUT_OF_RANGE when cpu_devices (or DPTRAIN_CPU_DEVICES) exceeds DPT_MAX_CPU_DEVICES,
 *         DPT_ERROR_INVALID_ARGUMENT when DPTRAIN_CPU_DEVICES is not a positive integer or device_selection
 *         is not a dpt_device_selection value. An unavailable CUDA backend is not an error: the context
 *         then has no CUDA devices, and dpt_backend_get_info() says why.
 */
DPT_API dpt_status dpt_context_create(dpt_context **out, const dpt_context_options *options);

/**
 * @brief Destroys a context. Accepts NULL. Its trainers may be destroyed before or after it: a trainer
 * keeps the devices it runs on alive until it is destroyed itself.
 */
DPT_API void dpt_context_destroy(dpt_context *context);

/** @brief Number of devices of the context, CPU and CUDA together, in the order of their indices. */
DPT_API dpt_status dpt_device_count(const dpt_context *context, size_t *count);

/**
 * @brief Describes device @p index (0 .. count-1).
 * @param context the context.
 * @param index the device's index.
 * @param info caller-owned; info->struct_size must be set to sizeof(dpt_device_info).
 */
DPT_API dpt_status dpt_device_get_info(const dpt_context *context, size_t index, dpt_device_info *info);

/**
 * @brief Whether device @p index can read and write the memory of device @p peer_index directly.
 *
 * 1 when both are CUDA devices and cudaDeviceCanAccessPeer says so (measured when the context was created);
 * 0 otherwise, including a device and itself and every pair with a CPU device.
 * @return DPT_ERROR_DEVICE_NOT_FOUND when an index is not a device of the context.
 */
DPT_API dpt_status dpt_device_can_access_peer(const dpt_context *context, size_t index, size_t peer_index,
                                              int *can_access);

/**
 * @brief How the backend of devices of @p kind fared in @p context: whether it was requested and loaded,
 * how many devices it gave, and, when none, why (for CUDA: module not found, CUDA libraries missing,
 * no driver, no GPU, ...).
 *
 * The text fields are copied into the caller's struct, so they need no lifetime management.
 * @param context the context.
 * @param kind the kind of devices (DPT_DEVICE_CPU or DPT_DEVICE_CUDA).
 * @param info caller-owned; info->struct_size must be set to sizeof(dpt_backend_info).
 * @return DPT_ERROR_INVALID_ARGUMENT when @p kind is not a dpt_device_kind value.
 */
DPT_API dpt_status dpt_backend_get_info(const dpt_context *context, dpt_device_kind kind,
                                        dpt_backend_info *info);

DPT_EXTERN_C_END

#endif /* DPTRAIN_DEVICE_H */
