/**
 * @file dataset.h
 * @brief In-memory classification datasets: IDX files (gzip or plain), Fashion-MNIST, caller arrays.
 *
 * Inputs are float32 NCHW samples; IDX pixels are scaled to [0, 1]. Labels are int32 class indices.
 */
#ifndef DPTRAIN_DATASET_H
#define DPTRAIN_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

DPT_EXTERN_C_BEGIN

/** @brief Opaque dataset held in host memory. */
typedef struct dpt_dataset dpt_dataset;

/** @brief Which part of a standard dataset to load. */
typedef enum dpt_dataset_part {
  DPT_DATASET_TRAIN = 0, /**< The training set (train-*). */
  DPT_DATASET_TEST = 1   /**< The test set (t10k-*). */
} dpt_dataset_part;

/** @brief Default Fashion-MNIST directory (Debian's dataset-fashion-mnist package). */
#define DPT_FASHION_MNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

/**
 * @brief Loads an IDX image file (magic 0x00000803, u8 pixels) and its IDX label file (0x00000801).
 *
 * Files may be gzip-compressed or plain. Headers, dimensions and sizes are validated. Only regular files
 * (or symbolic links to them) are read: a FIFO, a directory or a device is refused at once, without
 * blocking. A gzip file must be complete: its data end only where a member's end and its CRC-32 / length
 * trailer have been verified. Concatenated gzip members are read as one stream (as gzip -d does); bytes
 * after the last member that are not a complete member are refused.
 * @return DPT_ERROR_IO when a file cannot be opened or read, or is not a regular file ("'x' is not a
 *         regular file (a FIFO)"); DPT_ERROR_FORMAT for a bad magic, implausible dimensions, truncated or
 *         over-long data, a gzip stream that is cut short (a missing trailer included), corrupt (CRC-32 or
 *         length mismatch) or followed by other bytes, mismatched counts, or labels >= 256.
 */
DPT_API dpt_status dpt_dataset_load_idx(dpt_dataset **out, const char *images_path, const char *labels_path);

/**
 * @brief Loads Fashion-MNIST from @p directory ({train,t10k}-{images-idx3,labels-idx1}-ubyte.gz).
 * @param directory NULL = environment DPTRAIN_DATA_DIR if set, else DPT_FASHION_MNIST_DEFAULT_DIR.
 * @return as dpt_dataset_load_idx(), which reads the two files; DPT_ERROR_FORMAT also when the images
 *         are not 28x28 or a label exceeds 9.
 */
DPT_API dpt_status dpt_dataset_load_fashion_mnist(dpt_dataset **out, const char *directory,
                                                  dpt_dataset_part part);

/**
 * @brief Creates a dataset from caller arrays (copied; the caller keeps ownership).
 * @param inputs sample_count * channels * height * width floats (input_count of them).
 * @param labels sample_count labels, each in [0, classes).
 */
DPT_API dpt_status dpt_dataset_create(dpt_dataset **out, const float *inputs, size_t input_count,
                                      const int32_t *labels, size_t sample_count, size_t channels,
                                      size_t height, size_t width, size_t classes);

/** @brief Creates a dataset holding a copy of samples [start, start + count) of @p source. */
DPT_API dpt_status dpt_dataset_subset(dpt_dataset **out, const dpt_dataset *source, size_t start,
                                      size_t count);

/** @brief Destroys a dataset. Accepts NULL. */
DPT_API void dpt_dataset_destroy(dpt_dataset *dataset);

/** @brief Number of samples. */
DPT_API dpt_status dpt_dataset_sample_count(const dpt_dataset *dataset, size_t *count);

/** @brief Shape of one sample. Any output pointer may be NULL. */
DPT_API dpt_status dpt_dataset_shape(const dpt_dataset *dataset, size_t *channels, size_t *height,
                                     size_t *width);

/** @brief Number of classes (one more than the largest label, or as given to dpt_dataset_create()). */
DPT_API dpt_status dpt_dataset_class_count(const dpt_dataset *dataset, size_t *classes);

/**
 * @brief Copies samples [start, start + count) into caller buffers.
 * @param input_count must equal count * floats per sample; @p label_count must equal count.
 */
DPT_API dpt_status dpt_dataset_copy_batch(const dpt_dataset *dataset, size_t start, size_t count,
                                          float *inputs, size_t input_count, int32_t *labels,
                                          size_t label_count);

DPT_EXTERN_C_END

#endif /* DPTRAIN_DATASET_H */
