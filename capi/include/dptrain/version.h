/**
 * @file version.h
 * @brief Library version: compile-time macros and the version of the loaded library.
 *
 * A minor version only adds: functions, fields appended to structs, enum values and constants (0.2 added
 * checkpoints, CUDA and MPI; docs/c-api.md lists what). The SONAME, libdptrain.so.0, changes only with the
 * major version, so a program may run on an older or a newer 0.x library than the headers it was built with.
 * To use what a minor version added, e.g. 0.2:
 * - at compile time, against the headers: `#if DPT_VERSION_NUMBER >= 200` (code that must also build
 *   against older headers);
 * - at run time, against the loaded library: `dpt_version_number() >= 200`. An older library reads only the
 *   option fields it knows (a 0.1 library ignores dpt_context_options.device_selection, for one) and leaves
 *   the result fields it does not know as the caller set them.
 * Each function belongs to the version node of the release that added it (DPTRAIN_0 for 0.1, DPTRAIN_0.2;
 * capi/dptrain.map): a program that calls a 0.2 function refuses to start on a 0.1 library (the loader
 * reports version DPTRAIN_0.2 not found) instead of failing at the call. A program that must also run on 0.1
 * checks dpt_version_number() >= 200 and then looks the function up with dlsym().
 */
#ifndef DPTRAIN_VERSION_H
#define DPTRAIN_VERSION_H

#include "export.h"

/** @brief Major version: changes only on an ABI break (it is the SONAME's number). */
#define DPT_VERSION_MAJOR 0
/** @brief Minor version: new symbols or fields, backwards compatible. */
#define DPT_VERSION_MINOR 2
/** @brief Patch version: fixes only. */
#define DPT_VERSION_PATCH 0
/** @brief The version as one number, `major * 10000 + minor * 100 + patch`. */
#define DPT_VERSION_NUMBER (DPT_VERSION_MAJOR * 10000 + DPT_VERSION_MINOR * 100 + DPT_VERSION_PATCH)

DPT_EXTERN_C_BEGIN

/** @brief Version of the loaded library as `major * 10000 + minor * 100 + patch`; compare with
 * DPT_VERSION_NUMBER. */
DPT_API unsigned dpt_version_number(void);

/** @brief Version of the loaded library as static text, e.g. "0.2.0". Never NULL. */
DPT_API const char *dpt_version_string(void);

DPT_EXTERN_C_END

#endif /* DPTRAIN_VERSION_H */
