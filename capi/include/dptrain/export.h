/**
 * @file export.h
 * @brief Symbol visibility and calling-convention macros shared by every public header.
 */
#ifndef DPTRAIN_EXPORT_H
#define DPTRAIN_EXPORT_H

/** @brief Marks a function as part of the public ABI (exported from the shared library). */
#if defined(_WIN32)
#if defined(DPTRAIN_BUILDING_LIBRARY)
#define DPT_API __declspec(dllexport)
#else
#define DPT_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define DPT_API __attribute__((visibility("default")))
#else
#define DPT_API
#endif

/** @def DPT_EXTERN_C_BEGIN
 * @brief Opens an extern "C" block in C++ (nothing in C). */
/** @def DPT_EXTERN_C_END
 * @brief Closes the block DPT_EXTERN_C_BEGIN opened. */
#ifdef __cplusplus
#define DPT_EXTERN_C_BEGIN extern "C" {
#define DPT_EXTERN_C_END }
#else
#define DPT_EXTERN_C_BEGIN
#define DPT_EXTERN_C_END
#endif

#endif /* DPTRAIN_EXPORT_H */
