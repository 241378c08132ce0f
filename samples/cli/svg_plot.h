/**
 * @file svg_plot.h
 * @brief The --plot drawing: a self-contained SVG with a loss panel and an accuracy panel per epoch.
 */
#ifndef DPTRAIN_CLI_SVG_PLOT_H
#define DPTRAIN_CLI_SVG_PLOT_H

#include <stdio.h>

#include "epoch_log.h"

/** @brief Writes the whole SVG document for @p log under @p title to @p out. */
void svg_plot_write(FILE *out, const char *title, const epoch_log *log);

#endif /* DPTRAIN_CLI_SVG_PLOT_H */
