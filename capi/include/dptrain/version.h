/**
 * @file version.h
 * @brief Library version: compile-time macros and the version of the loaded library.
 */
#ifndef DPTRAIN_VERSION_H
#define DPTRAIN_VERSION_H

#include "export.h"

/** @brief Major version: changes only on an ABI break (it is the SONAME's number). */
#define DPT_VERSION_MAJOR 0
/** @brief Minor version: new symbols or fields, backwards compatible. */
#define DPT_VERSION_MINOR 1
/** @brief Patch version: fixes only. */
#define DPT_VERSION_PATCH 0
/** @brief The version as one number, `major * 10000 + minor * 100 + patch`. */
#define DPT_VERSION_NUMBER (DPT_VERSION_MAJOR * 10000 + DPT_VERSION_MINOR * 100 + DPT_VERSION_PATCH)

DPT_EXTERN_C_BEGIN

/** @brief Version of the loaded library as `major * 10000 + minor * 100 + patch`; compare with
 * DPT_VERSION_NUMBER. */
DPT_API unsigned dpt_version_number(void);

/** @brief Version of the loaded library as static text, e.g. "0.1.0". Never NULL. */
DPT_API const char *dpt_version_string(void);

DPT_EXTERN_C_END

#endif /* DPTRAIN_VERSION_H */
