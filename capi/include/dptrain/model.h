/**
 * @file model.h
 * @brief Model descriptions: the built-in models and a builder for sequential classifiers.
 *
 * A model is a description (layer list and shapes), not weights: a trainer instantiates one replica of
 * it on each of its devices. Every model ends in a softmax cross-entropy loss over its outputs.
 * Tensors are NCHW, float32; a sample is `channels * height * width` floats.
 *
 * Threading: the dpt_model_add_* builders change the model and are refused with DPT_ERROR_BUSY while
 * another thread is in a call on the same model; queries and dpt_trainer_create() only read it and may run
 * on several threads at once.
 */
#ifndef DPTRAIN_MODEL_H
#define DPTRAIN_MODEL_H

#include <stddef.h>

#include "export.h"
#include "status.h"

DPT_EXTERN_C_BEGIN

/** @brief Opaque sequential model description. */
typedef struct dpt_model dpt_model;

/** @brief Elementwise activation functions. */
typedef enum dpt_activation {
  DPT_ACTIVATION_RELU = 0,    /**< max(0, x) */
  DPT_ACTIVATION_SIGMOID = 1, /**< 1 / (1 + exp(-x)) */
  DPT_ACTIVATION_TANH = 2     /**< tanh(x) */
} dpt_activation;

/** @brief Pooling kinds. */
typedef enum dpt_pool_kind {
  DPT_POOL_AVG = 0, /**< Average over the window. */
  DPT_POOL_MAX = 1  /**< Maximum over the window (the first maximum receives the gradient). */
} dpt_pool_kind;

/**
 * @brief Creates an empty model whose samples have shape channels x height x width.
 * @return DPT_ERROR_INVALID_ARGUMENT when a dimension is 0 or the sample has more than 2^28 floats.
 */
DPT_API dpt_status dpt_model_create(dpt_model **out, size_t channels, size_t height, size_t width);

/**
 * @brief Creates a built-in model for 1 x 28 x 28 inputs and 10 classes.
 *
 * - "lenet": conv 3x3 20 -> ReLU -> avg-pool 2 -> conv 5x5 50 -> ReLU -> avg-pool 2 -> flatten (800)
 *   -> dense 128 -> ReLU -> dense 10.
 * - "mlp": flatten (784) -> dense 256 -> ReLU -> dense 10.
 * - "resnet18": the textbook's ResNet-18 for 28x28 inputs: conv 3x3 64 (stride 1, no bias) -> batch norm ->
 *   ReLU (no max-pool), four stages of two basic blocks (64, 128, 256, 512 channels; stride 2 and a 1x1
 *   projection + batch norm at the start of stages 2-4), global average pooling, dense 10; 11.17 M
 *   parameters, named as torchvision's ResNet names them ("layer2.0.downsample.1.running_mean").
 * @return DPT_ERROR_INVALID_ARGUMENT for an unknown name.
 */
DPT_API dpt_status dpt_model_create_builtin(dpt_model **out, const char *name);

/** @brief Destroys a model. Accepts NULL. Trainers keep their own copy, so this may come first. */
DPT_API void dpt_model_destroy(dpt_model *model);

/** @brief Appends a fully connected layer with @p units outputs (it flattens its input). */
DPT_API dpt_status dpt_model_add_dense(dpt_model *model, size_t units);

/**
 * @brief Appends a 2-D convolution with square kernels.
 * @return DPT_ERROR_INVALID_ARGUMENT when a size is 0 or the kernel does not fit the padded input.
 */
DPT_API dpt_status dpt_model_add_conv2d(dpt_model *model, size_t out_channels, size_t kernel, size_t stride,
                                        size_t padding);

/** @brief Appends a pooling layer over square windows (no padding; the output size rounds down). */
DPT_API dpt_status dpt_model_add_pool(dpt_model *model, dpt_pool_kind kind, size_t window, size_t stride);

/** @brief Appends an elementwise activation. */
DPT_API dpt_status dpt_model_add_activation(dpt_model *model, dpt_activation activation);

/** @brief Appends a flatten layer (C x H x W -> CHW x 1 x 1). */
DPT_API dpt_status dpt_model_add_flatten(dpt_model *model);

/**
 * @brief Appends inverted dropout: in training each value is zeroed with probability @p rate and the
 * rest scaled by 1 / (1 - rate); identity in evaluation. The mask depends on the seed, the step and
 * the sample's position in the global batch, never on the split.
 * @return DPT_ERROR_OUT_OF_RANGE unless 0 <= rate < 1.
 */
DPT_API dpt_status dpt_model_add_dropout(dpt_model *model, float rate);

/** @brief Floats per input sample (channels * height * width). */
DPT_API dpt_status dpt_model_input_size(const dpt_model *model, size_t *size);

/** @brief Number of outputs (classes) of the last layer. */
DPT_API dpt_status dpt_model_output_size(const dpt_model *model, size_t *size);

/** @brief Number of trainable parameters (floats). */
DPT_API dpt_status dpt_model_parameter_count(const dpt_model *model, size_t *count);

/** @brief Number of layers. */
DPT_API dpt_status dpt_model_layer_count(const dpt_model *model, size_t *count);

/**
 * @brief Writes a one-line description, e.g. "1x28x28 conv3x3s1p0:20 relu ... dense:10".
 * @param buffer may be NULL when @p capacity is 0.
 * @param needed receives the length including the terminating NUL (may be NULL).
 * @return DPT_ERROR_BUFFER_TOO_SMALL (with *needed set) when capacity is too small.
 */
DPT_API dpt_status dpt_model_describe(const dpt_model *model, char *buffer, size_t capacity, size_t *needed);

DPT_EXTERN_C_END

#endif /* DPTRAIN_MODEL_H */
