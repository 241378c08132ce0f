/**
 * @file dataset.h
 * @brief In-memory datasets: IDX files (gzip or plain), Fashion-MNIST, byte-level text, caller arrays.
 *
 * A sample is float32 values (NCHW; IDX pixels scaled to [0, 1]) with one int32 class label, or int32
 * tokens (a sequence) with one target per position (the next token) or one label. A label of
 * DPT_IGNORE_LABEL does not count: no loss, no gradient, not in the count the loss is divided by.
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

/** @brief A label that does not count (padding): as PyTorch's ignore_index, here -1. */
#define DPT_IGNORE_LABEL (-1)

/** @brief The vocabulary of dpt_dataset_load_text(): one token per byte. */
#define DPT_TEXT_VOCABULARY 256

/** @brief What the samples of a dataset (or the input of a model) are. */
typedef enum dpt_input_type {
  DPT_INPUT_FLOAT32 = 0, /**< float32 values (images NCHW). */
  DPT_INPUT_TOKENS = 1   /**< int32 tokens, each in [0, vocabulary). */
} dpt_input_type;

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
 * @param out receives the dataset (60000 training or 10000 test images of 1x28x28, 10 classes).
 * @param directory NULL = environment DPTRAIN_DATA_DIR if set, else DPT_FASHION_MNIST_DEFAULT_DIR.
 * @param part DPT_DATASET_TRAIN or DPT_DATASET_TEST.
 * @return as dpt_dataset_load_idx(), which reads the two files; DPT_ERROR_FORMAT also when the images
 *         are not 28x28 or a label exceeds 9.
 */
DPT_API dpt_status dpt_dataset_load_fashion_mnist(dpt_dataset **out, const char *directory,
                                                  dpt_dataset_part part);

/**
 * @brief Creates a dataset from caller arrays (copied; the caller keeps ownership).
 * @param out receives the dataset.
 * @param inputs sample_count * channels * height * width floats (input_count of them).
 * @param input_count the number of floats at @p inputs.
 * @param labels sample_count labels, each in [0, classes).
 * @param sample_count the number of samples.
 * @param channels the shape of one sample: channels x height x width.
 * @param height see @p channels.
 * @param width see @p channels.
 * @param classes the number of classes.
 */
DPT_API dpt_status dpt_dataset_create(dpt_dataset **out, const float *inputs, size_t input_count,
                                      const int32_t *labels, size_t sample_count, size_t channels,
                                      size_t height, size_t width, size_t classes);

/**
 * @brief Loads byte-level text: every byte of UTF-8 text is a token (vocabulary DPT_TEXT_VOCABULARY), cut
 * into windows of context_length + 1 bytes: a sample's tokens are the first context_length, its targets the
 * last context_length (the next byte at every position). The last @p validation_fraction of the bytes
 * (by position, after the files are joined in name order) make the validation set, the rest the training
 * set; windows start every context_length bytes, so every byte but the last of each part is a target once.
 * @param train receives the training part.
 * @param path a UTF-8 text file, or a directory whose regular files are read in bytewise name order, each
 *        one that is UTF-8 text without NUL bytes (the others, e.g. fortune's .dat indexes, are skipped;
 *        symbolic links and names starting with '.' too).
 * @param validation receives the validation part; may be NULL (the validation part is then not kept).
 * @param context_length the tokens of one sample (e.g. 128).
 * @param validation_fraction in (0, 1), e.g. 0.1.
 * @return DPT_ERROR_IO when the path cannot be read; DPT_ERROR_FORMAT for a named file that is not UTF-8
 *         text (with the offset of the first bad byte), an empty file, a directory without text, or more
 *         than 2 GiB of text; DPT_ERROR_INVALID_ARGUMENT for a context_length of 0 or above 2^20, a fraction
 *         outside (0, 1), or a part too short for one window ("a context of 128 needs at least 129 bytes in
 *         each part; the validation part has 50").
 */
DPT_API dpt_status dpt_dataset_load_text(dpt_dataset **train, dpt_dataset **validation, const char *path,
                                         size_t context_length, double validation_fraction);

/**
 * @brief Creates a token dataset from caller arrays (copied).
 * @param out receives the dataset.
 * @param tokens sample_count * sequence_length tokens (token_count of them), each in [0, vocabulary).
 * @param targets target_count labels: sample_count * sequence_length (one per position, for a model whose
 *        output is [sequence_length, vocabulary]) or sample_count (one per sample); each in
 *        [0, vocabulary) or DPT_IGNORE_LABEL.
 * @param token_count the number of tokens at @p tokens.
 * @param target_count the number of labels at @p targets.
 * @param sample_count the number of samples.
 * @param sequence_length the tokens of one sample.
 * @param vocabulary the number of token values.
 * @return DPT_ERROR_INVALID_ARGUMENT for a count, length or vocabulary (1..2^24) of 0;
 *         DPT_ERROR_SIZE_MISMATCH for a token_count or target_count that fits neither; DPT_ERROR_OUT_OF_RANGE
 *         for a token or a label out of range (naming the sample and position).
 */
DPT_API dpt_status dpt_dataset_create_tokens(dpt_dataset **out, const int32_t *tokens, size_t token_count,
                                             const int32_t *targets, size_t target_count, size_t sample_count,
                                             size_t sequence_length, size_t vocabulary);

/** @brief Whether the samples are float32 values or int32 tokens. */
DPT_API dpt_status dpt_dataset_input_type(const dpt_dataset *dataset, dpt_input_type *type);

/** @brief Labels per sample: 1 for a classification dataset, the sequence length for next-token targets. */
DPT_API dpt_status dpt_dataset_targets_per_sample(const dpt_dataset *dataset, size_t *count);

/**
 * @brief Copies samples [start, start + count) of a token dataset into caller buffers.
 * @param dataset a token dataset.
 * @param start the first sample.
 * @param count the number of samples.
 * @param tokens receives count * sequence length tokens.
 * @param token_count must equal count * sequence length.
 * @param targets receives count * targets per sample labels.
 * @param target_count must equal count * targets per sample.
 * @return DPT_ERROR_INVALID_ARGUMENT for a float32 dataset (use dpt_dataset_copy_batch) or a count of 0;
 *         DPT_ERROR_OUT_OF_RANGE, DPT_ERROR_SIZE_MISMATCH as dpt_dataset_copy_batch.
 */
DPT_API dpt_status dpt_dataset_copy_tokens(const dpt_dataset *dataset, size_t start, size_t count,
                                           int32_t *tokens, size_t token_count, int32_t *targets,
                                           size_t target_count);

/** @brief Creates a dataset holding a copy of samples [start, start + count) of @p source. */
DPT_API dpt_status dpt_dataset_subset(dpt_dataset **out, const dpt_dataset *source, size_t start,
                                      size_t count);

/** @brief Destroys a dataset. Accepts NULL. */
DPT_API void dpt_dataset_destroy(dpt_dataset *dataset);

/** @brief Number of samples. */
DPT_API dpt_status dpt_dataset_sample_count(const dpt_dataset *dataset, size_t *count);

/** @brief Shape of one sample (a token dataset: sequence length x 1 x 1). Any output pointer may be NULL. */
DPT_API dpt_status dpt_dataset_shape(const dpt_dataset *dataset, size_t *channels, size_t *height,
                                     size_t *width);

/** @brief Number of classes (one more than the largest label, or as given to dpt_dataset_create(); a token
 * dataset: its vocabulary). */
DPT_API dpt_status dpt_dataset_class_count(const dpt_dataset *dataset, size_t *classes);

/**
 * @brief Copies samples [start, start + count) of a float32 dataset into caller buffers.
 * @param dataset a float32 dataset.
 * @param start the first sample.
 * @param count the number of samples.
 * @param inputs receives count * floats per sample.
 * @param input_count must equal count * floats per sample.
 * @param labels receives count labels.
 * @param label_count must equal count.
 * @return DPT_ERROR_INVALID_ARGUMENT for a token dataset (use dpt_dataset_copy_tokens) or a count of 0.
 */
DPT_API dpt_status dpt_dataset_copy_batch(const dpt_dataset *dataset, size_t start, size_t count,
                                          float *inputs, size_t input_count, int32_t *labels,
                                          size_t label_count);

DPT_EXTERN_C_END

#endif /* DPTRAIN_DATASET_H */
