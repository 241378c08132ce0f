/**
 * @file cli.h
 * @brief Exit codes and error reporting shared by the commands of the `dptrain` program.
 *
 * Every error is one line on stderr that starts with "dptrain: error:". Bad command lines exit
 * with CLI_EXIT_USAGE, failures of the library or of the system with CLI_EXIT_FAILURE.
 */
#ifndef DPTRAIN_CLI_CLI_H
#define DPTRAIN_CLI_CLI_H

#include <dptrain/dptrain.h>

/** @brief Exit statuses of the program. */
enum {
  CLI_EXIT_OK = 0,         /**< Success. */
  CLI_EXIT_FAILURE = 1,    /**< The library or the system failed. */
  CLI_EXIT_USAGE = 2,      /**< The command line is wrong. */
  CLI_EXIT_INTERRUPT = 130 /**< Training was stopped by Ctrl-C (128 + SIGINT, as shells report it). */
};

#if defined(__MINGW32__)
/* mingw-w64's C99 printf (__USE_MINGW_ANSI_STDIO), whose %zu GCC checks as gnu_printf, not msvcrt's. */
#define CLI_PRINTF(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#elif defined(__GNUC__)
#define CLI_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CLI_PRINTF(fmt, args)
#endif

/** @brief Prints "dptrain: error: <message>" and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *format, ...) CLI_PRINTF(1, 2);

/** @brief Prints "dptrain: error: <status string>: <last error message>" and returns CLI_EXIT_FAILURE. */
int cli_library_error(dpt_status status);

/** @brief Prints "dptrain: error: <what> '<path>': <strerror(errno)>" and returns CLI_EXIT_FAILURE. */
int cli_system_error(const char *what, const char *path);

/** @brief Returns from the calling function with CLI_EXIT_FAILURE when a library call fails. */
#define CLI_TRY(call)                                                 \
  do {                                                                \
    dpt_status cli_status_ = (call);                                  \
    if (cli_status_ != DPT_OK) return cli_library_error(cli_status_); \
  } while (0)

/** @brief `dptrain devices`: lists the devices of a default context. */
int cli_devices_main(int argc, char **argv);

/** @brief `dptrain train`: trains a built-in model or a JSON model file on Fashion-MNIST or text. */
int cli_train_main(int argc, char **argv);

/** @brief `dptrain generate`: prints text sampled from a token model's checkpoint. */
int cli_generate_main(int argc, char **argv);

/** @brief `dptrain model`: prints a model as JSON. */
int cli_model_main(int argc, char **argv);

#endif /* DPTRAIN_CLI_CLI_H */
