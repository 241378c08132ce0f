/*
 * The --plot drawing, written with plain fprintf. Two panels side by side share the epoch axis:
 * loss (train and test) on the left, accuracy (train and test) on the right. Train curves are solid
 * blue, test curves dashed red, so they stay apart in grey print too.
 */
#include "svg_plot.h"

#include <math.h>
#include <string.h>

/* Canvas and panel geometry, in SVG user units. */
#define CANVAS_WIDTH 960.0
#define CANVAS_HEIGHT 440.0
#define PANEL_WIDTH (CANVAS_WIDTH / 2)
#define PLOT_LEFT_MARGIN 70.0
#define PLOT_RIGHT_MARGIN 30.0
#define PLOT_TOP 90.0
#define PLOT_BOTTOM 370.0
#define TICK_LENGTH 5.0

#define TRAIN_COLOR "#1f77b4"
#define TEST_COLOR "#d62728"

/** @brief A linear axis: data range [lo, hi] with ticks every step. */
typedef struct axis {
  double lo;
  double hi;
  double step;
} axis;

/** @brief The screen rectangle of a plot area. */
typedef struct frame {
  double left, right, top, bottom;
} frame;

/** @brief One curve: how to read it from a record, and how to draw it. */
typedef struct series {
  const char *label;
  const char *color;
  int dashed;
  int test; /**< Drawn only for records that have a test evaluation. */
  double (*value)(const epoch_record *record);
} series;

static double train_loss(const epoch_record *r) {
  return r->train_loss;
}
static double test_loss(const epoch_record *r) {
  return r->test_loss;
}
static double train_accuracy(const epoch_record *r) {
  return r->train_accuracy;
}
static double test_accuracy(const epoch_record *r) {
  return r->test_accuracy;
}

static const series kLossSeries[] = {{"train loss", TRAIN_COLOR, 0, 0, train_loss},
                                     {"test loss", TEST_COLOR, 1, 1, test_loss}};
static const series kAccuracySeries[] = {{"train accuracy", TRAIN_COLOR, 0, 0, train_accuracy},
                                         {"test accuracy", TEST_COLOR, 1, 1, test_accuracy}};

static int has_point(const series *s, const epoch_record *r) {
  return (!s->test || r->has_test) && isfinite(s->value(r));
}

/** @brief Rounds @p raw up to 1, 2 or 5 times a power of ten. */
static double nice_step(double raw) {
  double magnitude = pow(10.0, floor(log10(raw)));
  double fraction = raw / magnitude;
  if (fraction <= 1.0) return magnitude;
  if (fraction <= 2.0) return 2.0 * magnitude;
  if (fraction <= 5.0) return 5.0 * magnitude;
  return 10.0 * magnitude;
}

/** @brief An axis covering [lo, hi] with about five ticks at round values. */
static axis nice_axis(double lo, double hi) {
  axis a;
  if (!(hi > lo)) {
    /* A flat curve (or a single point) still needs a visible range around it. */
    double pad = fabs(lo) * 0.1 > 0.01 ? fabs(lo) * 0.1 : 0.01;
    lo -= pad;
    hi += pad;
  }
  a.step = nice_step((hi - lo) / 5.0);
  a.lo = floor(lo / a.step) * a.step;
  a.hi = ceil(hi / a.step) * a.step;
  return a;
}

/** @brief The y axis of a panel: the range of its finite values, kept inside [floor, ceiling]. */
static axis value_axis(const series *list, size_t count, const epoch_log *log, double floor_value,
                       double ceiling) {
  double lo = INFINITY, hi = -INFINITY;
  size_t s, i;
  axis a;
  for (s = 0; s < count; ++s) {
    for (i = 0; i < log->count; ++i) {
      double v = list[s].value(&log->records[i]);
      if (!has_point(&list[s], &log->records[i])) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (!isfinite(lo)) { /* no data: an empty but labelled panel */
    lo = floor_value;
    hi = floor_value + 1.0;
  }
  a = nice_axis(lo, hi);
  if (a.lo < floor_value) a.lo = floor_value;
  if (a.hi > ceiling) a.hi = ceiling;
  return a;
}

/** @brief The epoch axis: 1..n, or 0..2 around a single epoch; integer ticks. */
static axis epoch_axis(size_t epochs) {
  axis a;
  a.lo = epochs > 1 ? 1.0 : 0.0;
  a.hi = epochs > 1 ? (double)epochs : 2.0;
  a.step = nice_step((a.hi - a.lo) / 8.0);
  if (a.step < 1.0) a.step = 1.0;
  return a;
}

static double map_x(const frame *f, const axis *a, double v) {
  return f->left + (v - a->lo) / (a->hi - a->lo) * (f->right - f->left);
}

static double map_y(const frame *f, const axis *a, double v) {
  return f->bottom - (v - a->lo) / (a->hi - a->lo) * (f->bottom - f->top);
}

/** @brief Decimals that tell ticks @p step apart: 0.05 -> 2, 0.2 -> 1, 5 -> 0. */
static int tick_decimals(double step) {
  int decimals = (int)-floor(log10(step) + 1e-9);
  return decimals > 0 ? decimals : 0;
}

static void write_escaped_text(FILE *out, const char *text) {
  for (; *text != '\0'; ++text) {
    switch (*text) {
      case '&':
        fputs("&amp;", out);
        break;
      case '<':
        fputs("&lt;", out);
        break;
      case '>':
        fputs("&gt;", out);
        break;
      case '"':
        fputs("&quot;", out);
        break;
      default:
        fputc(*text, out);
    }
  }
}

/** @brief Grid line, tick and label for each y tick. */
static void draw_y_ticks(FILE *out, const frame *f, const axis *a) {
  int decimals = tick_decimals(a->step);
  double v;
  /* Half a step of slack absorbs rounding in lo + k * step. */
  for (v = ceil(a->lo / a->step - 1e-9) * a->step; v <= a->hi + a->step * 1e-6; v += a->step) {
    double y = map_y(f, a, v);
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e6e6e6\"/>\n", f->left, y,
            f->right, y);
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n",
            f->left - TICK_LENGTH, y, f->left, y);
    fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%.*f</text>\n", f->left - TICK_LENGTH - 3,
            y + 4, decimals, fabs(v) < a->step * 1e-6 ? 0.0 : v);
  }
}

static void draw_x_ticks(FILE *out, const frame *f, const axis *a) {
  double v;
  for (v = ceil(a->lo / a->step - 1e-9) * a->step; v <= a->hi + a->step * 1e-6; v += a->step) {
    double x = map_x(f, a, v);
    if (v < 1.0 - 1e-9) continue; /* there is no epoch 0 */
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e6e6e6\"/>\n", x, f->top, x,
            f->bottom);
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333\"/>\n", x, f->bottom, x,
            f->bottom + TICK_LENGTH);
    fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.0f</text>\n", x, f->bottom + 20, v);
  }
}

static void draw_axes(FILE *out, const frame *f, const char *y_label) {
  fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#333\"/>\n",
          f->left, f->top, f->right - f->left, f->bottom - f->top);
  fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">epoch</text>\n", (f->left + f->right) / 2,
          f->bottom + 42);
  fprintf(
      out,
      "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" transform=\"rotate(-90 %.2f %.2f)\">%s</text>\n",
      f->left - 50, (f->top + f->bottom) / 2, f->left - 50, (f->top + f->bottom) / 2, y_label);
}

static void draw_series(FILE *out, const frame *f, const axis *x, const axis *y, const series *s,
                        const epoch_log *log) {
  size_t i;
  const char *dash = s->dashed ? " stroke-dasharray=\"6 4\"" : "";
  fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", s->color, dash);
  for (i = 0; i < log->count; ++i) {
    const epoch_record *r = &log->records[i];
    if (has_point(s, r)) fprintf(out, "%.2f,%.2f ", map_x(f, x, (double)r->epoch), map_y(f, y, s->value(r)));
  }
  fputs("\"/>\n", out);
  for (i = 0; i < log->count; ++i) {
    const epoch_record *r = &log->records[i];
    if (!has_point(s, r)) continue;
    fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n", map_x(f, x, (double)r->epoch),
            map_y(f, y, s->value(r)), s->color);
  }
}

/** @brief The panel heading on the left and a legend entry per series after it, above the plot area. */
static void draw_heading_and_legend(FILE *out, const frame *f, const char *heading, const series *list,
                                    size_t count) {
  double x = f->left + 110;
  double y = f->top - 18;
  size_t s;
  fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", f->left,
          y + 4, heading);
  for (s = 0; s < count; ++s) {
    const char *dash = list[s].dashed ? " stroke-dasharray=\"6 4\"" : "";
    fprintf(out,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x,
            y, x + 26, y, list[s].color, dash);
    fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n", x + 13, y, list[s].color);
    fprintf(out, "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n", x + 32, y + 4, list[s].label);
    /* About 7 units per character at font-size 12, plus the sample line and a gap. */
    x += 32 + 7.0 * (double)strlen(list[s].label) + 22;
  }
}

static void draw_panel(FILE *out, double x0, const char *heading, const char *y_label, const series *list,
                       size_t count, const axis *y, const epoch_log *log) {
  frame f;
  axis x = epoch_axis(log->count > 0 ? log->records[log->count - 1].epoch : 1);
  size_t s;
  f.left = x0 + PLOT_LEFT_MARGIN;
  f.right = x0 + PANEL_WIDTH - PLOT_RIGHT_MARGIN;
  f.top = PLOT_TOP;
  f.bottom = PLOT_BOTTOM;
  draw_heading_and_legend(out, &f, heading, list, count);
  draw_y_ticks(out, &f, y);
  draw_x_ticks(out, &f, &x);
  draw_axes(out, &f, y_label);
  for (s = 0; s < count; ++s) draw_series(out, &f, &x, y, &list[s], log);
  if (log->count == 0) {
    fprintf(out,
            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#888\">no completed epoch</text>\n",
            (f.left + f.right) / 2, (f.top + f.bottom) / 2);
  }
}

void svg_plot_write(FILE *out, const char *title, const epoch_log *log) {
  axis loss = value_axis(kLossSeries, 2, log, 0.0, INFINITY);
  axis accuracy = value_axis(kAccuracySeries, 2, log, 0.0, 1.0);
  fprintf(
      out,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\" fill=\"#222\">\n",
      CANVAS_WIDTH, CANVAS_HEIGHT, CANVAS_WIDTH, CANVAS_HEIGHT);
  fputs("<title>", out);
  write_escaped_text(out, title);
  fputs("</title>\n", out);
  fprintf(out, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", CANVAS_WIDTH, CANVAS_HEIGHT);
  fprintf(out, "<text x=\"%.0f\" y=\"30\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">",
          CANVAS_WIDTH / 2);
  write_escaped_text(out, title);
  fputs("</text>\n", out);
  draw_panel(out, 0.0, "Loss", "cross-entropy loss", kLossSeries, 2, &loss, log);
  draw_panel(out, PANEL_WIDTH, "Accuracy", "accuracy", kAccuracySeries, 2, &accuracy, log);
  fputs("</svg>\n", out);
}
