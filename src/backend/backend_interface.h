/*
 * The interface between libdptrain.so and a loadable backend module (libdptrain_cuda.so), in plain C:
 * it crosses a dlopen boundary, so no C++ type, exception or allocation crosses it.
 *
 * A module exports exactly one symbol, its entry function (DPT_BACKEND_ENTRY_CUDA for the CUDA module),
 * which returns a pointer to a static table of functions. The core checks abi_version (a different value
 * is a different interface) and struct_size (a version-1 table only ever grows by appended members; the
 * core needs at least the members it knows). Everything else in the module is hidden.
 *
 * Every function: never throws, never aborts, is safe to call from any thread, and returns 0 on success
 * or a non-zero value with a one-line, NUL-terminated reason written to error[0 .. error_size).
 */
#ifndef DPTRAIN_BACKEND_INTERFACE_H
#define DPTRAIN_BACKEND_INTERFACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the table below; a module with another version is refused. */
#define DPT_BACKEND_ABI_VERSION 1u

/** Name of the CUDA module's entry function. */
#define DPT_BACKEND_ENTRY_CUDA "dptrain_cuda_backend_v1"

/** File name of the CUDA module, looked for next to libdptrain.so or in $DPTRAIN_BACKEND_PATH. */
#define DPT_BACKEND_MODULE_CUDA "libdptrain_cuda.so"

/** Discovery facts of one device. */
typedef struct dpt_backend_device_props {
  char name[256];      /**< product name, e.g. "NVIDIA H200" */
  char pci_bus_id[32]; /**< "0000:19:00.0" */
  uint64_t total_memory;
  uint64_t free_memory;
  int32_t compute_capability_major;
  int32_t compute_capability_minor;
  int32_t multiprocessor_count;
} dpt_backend_device_props;

/** Versions of the runtime, the driver and the libraries the module links. */
typedef struct dpt_backend_versions {
  int32_t runtime_version; /**< CUDA encoding: 1000 * major + 10 * minor; 0 = unknown */
  int32_t driver_version;  /**< 0 = no driver */
  char text[256]; /**< e.g. "CUDA runtime 13.0, driver none, cuBLAS 13.1.0, cuDNN 9.19.0, NCCL 2.28.9" */
} dpt_backend_versions;

/** The function table a module returns. */
typedef struct dpt_backend_v1 {
  uint32_t abi_version; /**< DPT_BACKEND_ABI_VERSION */
  uint32_t struct_size; /**< sizeof(dpt_backend_v1) as the module was built */
  const char *name;     /**< "cuda" */

  /** Number of usable devices. *count = 0 with a non-zero return and the reason (no driver, no GPU, ...)
   *  when there are none; a count of 0 with a zero return does not happen. */
  int (*device_count)(int *count, char *error, size_t error_size);
  /** Facts of device @p ordinal (0 .. count-1); free_memory is measured now. */
  int (*device_props)(int ordinal, dpt_backend_device_props *props, char *error, size_t error_size);
  /** *can_access = 1 when @p ordinal can access @p peer's memory directly (cudaDeviceCanAccessPeer). */
  int (*can_access_peer)(int ordinal, int peer, int *can_access, char *error, size_t error_size);
  /** Fills @p versions; never fails. */
  void (*versions)(dpt_backend_versions *versions);
  /** Runs a small kernel and each library (BLAS, DNN, collectives) on device @p ordinal and checks the
   *  results: proves that the module's device code and libraries work on this GPU. */
  int (*self_test)(int ordinal, char *error, size_t error_size);
} dpt_backend_v1;

/** Signature of a module's entry function. */
typedef const dpt_backend_v1 *(*dpt_backend_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DPTRAIN_BACKEND_INTERFACE_H */
