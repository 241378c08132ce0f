/**
 * @file platform.h
 * @brief The few operating-system calls of the CLI (clock, terminal detection), kept in one place
 * so that the program also builds for Windows.
 */
#ifndef DPTRAIN_CLI_PLATFORM_H
#define DPTRAIN_CLI_PLATFORM_H

#include <stdio.h>

/** @brief Seconds from a monotonic clock (only differences are meaningful). */
double platform_now_seconds(void);

/** @brief Nonzero when @p stream is an interactive terminal. */
int platform_is_terminal(FILE *stream);

#endif /* DPTRAIN_CLI_PLATFORM_H */
