/**
 * @file model.h
 * @brief Model descriptions: the built-in models, builders for sequential and graph models, named
 * parameters and buffers, and JSON model files.
 *
 * A model is a description (a graph of ops and the shapes of its tensors), not weights: a trainer
 * instantiates one replica of it on each of its devices. Every model ends in a softmax cross-entropy loss
 * over its output tensor. Tensors are NCHW, float32; a sample is `channels * height * width` floats.
 *
 * Tensors are numbered: tensor 0 is the input, and each added node makes one new tensor, numbered in the
 * order of the calls. The sequential dpt_model_add_* calls append a node on the current output; the graph
 * calls (dpt_model_conv2d, dpt_model_add, ...) name the tensors they read and return the id of the tensor
 * they make, so any DAG can be built. Each added node's tensor becomes the model's output (the logits);
 * dpt_model_set_output picks another. Every node has a name (the @p name argument; NULL: the node's index,
 * as "3"); its parameters and buffers are named after it ("layer1.0.bn1.running_mean").
 *
 * A ResNet basic block, y = relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)):
 * @code
 * dpt_status basic_block(dpt_model *m, size_t x, size_t channels, size_t stride, size_t *out) {
 *   size_t y, s = x, dims[DPT_MODEL_MAX_RANK], rank;
 *   dpt_status e;
 *   if ((e = dpt_model_tensor_shape(m, x, dims, DPT_MODEL_MAX_RANK, &rank)) ||
 *       (e = dpt_model_conv2d(m, x, channels, 3, stride, 1, 0, NULL, &y)) ||
 *       (e = dpt_model_batch_norm(m, y, 1e-5f, 0.1f, NULL, &y)) ||
 *       (e = dpt_model_activation(m, y, DPT_ACTIVATION_RELU, NULL, &y)) ||
 *       (e = dpt_model_conv2d(m, y, channels, 3, 1, 1, 0, NULL, &y)) ||
 *       (e = dpt_model_batch_norm(m, y, 1e-5f, 0.1f, NULL, &y)))
 *     return e;
 *   if ((stride != 1 || dims[0] != channels) &&  // the shortcut: a 1x1 projection
 *       ((e = dpt_model_conv2d(m, x, channels, 1, stride, 0, 0, NULL, &s)) ||
 *        (e = dpt_model_batch_norm(m, s, 1e-5f, 0.1f, NULL, &s))))
 *     return e;
 *   if ((e = dpt_model_add(m, y, s, NULL, &y))) return e;
 *   return dpt_model_activation(m, y, DPT_ACTIVATION_RELU, NULL, out);
 * }
 * @endcode
 *
 * Names: unique in the model, 1 to 200 bytes of letters, digits, '_', '.' and '-'; a name of digits only
 * must be the node's own index. Every graph builder returns DPT_ERROR_NULL_POINTER for a NULL model,
 * DPT_ERROR_INVALID_ARGUMENT for a tensor id that does not exist, a bad or taken name, or inputs of a shape
 * the op does not take, and DPT_ERROR_BUSY as below; a failed call leaves the model unchanged. @p out
 * receives the id of the new tensor and may be NULL.
 *
 * Threading: the builders (dpt_model_add_*, the graph calls, dpt_model_set_output) change the model and are
 * refused with DPT_ERROR_BUSY while another thread is in a call on the same model; queries,
 * dpt_model_to_json and dpt_trainer_create() only read it and may run on several threads at once.
 */
#ifndef DPTRAIN_MODEL_H
#define DPTRAIN_MODEL_H

#include <stddef.h>

#include "dataset.h"
#include "export.h"
#include "status.h"

DPT_EXTERN_C_BEGIN

/** @brief Opaque model description. */
typedef struct dpt_model dpt_model;

/** @brief The most dimensions a tensor has (one sample's). */
#define DPT_MODEL_MAX_RANK 4
/** @brief Bytes that hold every node, parameter or buffer name with its terminating NUL. */
#define DPT_MODEL_NAME_CAPACITY 256

/** @brief Elementwise activation functions. */
typedef enum dpt_activation {
  DPT_ACTIVATION_RELU = 0,     /**< max(0, x) */
  DPT_ACTIVATION_SIGMOID = 1,  /**< 1 / (1 + exp(-x)) */
  DPT_ACTIVATION_TANH = 2,     /**< tanh(x) */
  DPT_ACTIVATION_GELU = 3,     /**< x * Phi(x), Phi the normal distribution function (erf); since 0.2 */
  DPT_ACTIVATION_GELU_TANH = 4 /**< GELU's tanh approximation; since 0.2 */
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
 * @brief Creates an empty model whose samples are sequences of @p sequence_length int32 tokens (tensor 0,
 * read only by dpt_model_token_embedding). Since 0.2.
 * @return DPT_ERROR_INVALID_ARGUMENT for a length of 0 or above 2^28.
 */
DPT_API dpt_status dpt_model_create_tokens(dpt_model **out, size_t sequence_length);

/** @brief Whether the model reads float32 values or int32 tokens. Since 0.2. */
DPT_API dpt_status dpt_model_input_type(const dpt_model *model, dpt_input_type *type);

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
 * - "gpt-mini": a GPT-2-style pre-LayerNorm decoder on 128 byte tokens (dpt_dataset_load_text()): token
 *   and position embeddings (wte, wpe; 256 features), 4 blocks of layer norm -> causal self-attention (4
 *   heads; c_attn, c_proj) -> residual, layer norm -> MLP (1024, GELU tanh) -> residual, a final layer norm
 *   (ln_f) and the LM head (lm_head, no bias) to 256 logits at every position; 3.32 M parameters, named as
 *   nanoGPT names them ("transformer.h.0.attn.c_attn.weight"). Since 0.2.
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

/** @brief Appends an elementwise activation (any dpt_activation; the GELUs since 0.2). */
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

/** @brief Number of outputs (classes): the floats of one sample of the output tensor. */
DPT_API dpt_status dpt_model_output_size(const dpt_model *model, size_t *size);

/** @brief Number of trainable parameters (floats). */
DPT_API dpt_status dpt_model_parameter_count(const dpt_model *model, size_t *count);

/** @brief Number of layers (nodes). */
DPT_API dpt_status dpt_model_layer_count(const dpt_model *model, size_t *count);

/**
 * @brief Writes a one-line description, e.g. "1x28x28 conv3x3s1p0:20 relu ... dense:10".
 * @param model the model.
 * @param buffer may be NULL when @p capacity is 0.
 * @param capacity the bytes @p buffer holds.
 * @param needed receives the length including the terminating NUL (may be NULL).
 * @return DPT_ERROR_BUFFER_TOO_SMALL (with *needed set) when capacity is too small.
 */
DPT_API dpt_status dpt_model_describe(const dpt_model *model, char *buffer, size_t capacity, size_t *needed);

/* ---- graph models (0.2) ------------------------------------------------------------------------- */

/**
 * @brief The id of the output tensor (the logits); 0, the input, while the model has no node.
 * @return DPT_ERROR_NULL_POINTER for a NULL model or tensor; DPT_ERROR_BUSY while a builder runs on another
 * thread (as for every query).
 */
DPT_API dpt_status dpt_model_output(const dpt_model *model, size_t *tensor);

/**
 * @brief Makes @p tensor the model's output, the logits of the loss (the next added node moves it again).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT when the tensor does not
 * exist; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_set_output(dpt_model *model, size_t tensor);

/**
 * @brief Number of tensors: 1 (the input) + the number of nodes; ids are 0 .. count - 1.
 * @return DPT_ERROR_NULL_POINTER for a NULL model or count; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_tensor_count(const dpt_model *model, size_t *count);

/**
 * @brief The dimensions of one sample of @p tensor (e.g. 64, 28, 28).
 * @param model the model.
 * @param tensor a tensor id (0 .. tensor count - 1).
 * @param dims receives *rank values; may be NULL when @p capacity is 0.
 * @param capacity the entries @p dims holds.
 * @param rank receives the number of dimensions (1 to DPT_MODEL_MAX_RANK).
 * @return DPT_ERROR_NULL_POINTER for a NULL model or rank, or a NULL dims with a capacity;
 * DPT_ERROR_INVALID_ARGUMENT when the tensor does not exist; DPT_ERROR_BUFFER_TOO_SMALL (with *rank set,
 * dims untouched) when capacity < rank; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_tensor_shape(const dpt_model *model, size_t tensor, size_t *dims,
                                          size_t capacity, size_t *rank);

/**
 * @brief Adds a 2-D convolution of @p input (channels x height x width) with square kernels.
 * @param model the model.
 * @param input the id of the input tensor.
 * @param out_channels the number of output channels.
 * @param kernel the kernel's side.
 * @param stride the step between kernel positions.
 * @param padding zeros added on each side.
 * @param bias 1: with a bias per output channel; 0: without (before a batch norm).
 * @param name the node's name, or NULL for its index ("3").
 * @param out receives the id of the output tensor (may be NULL).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, an input that is not [c, h, w], a size of 0, a kernel that does not fit the
 * padded input, or a bias other than 0 and 1; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_conv2d(dpt_model *model, size_t input, size_t out_channels, size_t kernel,
                                    size_t stride, size_t padding, int bias, const char *name, size_t *out);

/**
 * @brief Adds a fully connected layer with @p units outputs over @p input (flattened).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, units of 0 or too many parameters, or a bias other than 0 and 1;
 * DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_dense(dpt_model *model, size_t input, size_t units, int bias, const char *name,
                                   size_t *out);

/**
 * @brief Adds a fully connected layer over the last dimension of @p input ([..., in] -> [..., units], every
 * row by one weight [units, in]), as PyTorch's nn.Linear. Since 0.2.
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, units of 0 or too many parameters, or a bias other than 0 and 1;
 * DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_linear(dpt_model *model, size_t input, size_t units, int bias, const char *name,
                                    size_t *out);

/**
 * @brief Adds a token embedding: the int32 tokens [T] of the model's input -> [T, features], row t the
 * table row of token t (parameter weight [vocabulary, features], GPT-2's wte). Since 0.2.
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for an input that is not the
 * model's token input, a vocabulary outside 1..2^24, features of 0, a table above 2^30 parameters, a bad or
 * taken name; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_token_embedding(dpt_model *model, size_t input, size_t vocabulary,
                                             size_t features, const char *name, size_t *out);

/**
 * @brief Adds a learned position embedding to @p input [T, C]: y[t] = x[t] + weight[t] (parameter weight
 * [T, C], GPT-2's wpe). Since 0.2.
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist or is not [T, C], a bad or taken name; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_position_embedding(dpt_model *model, size_t input, const char *name,
                                                size_t *out);

/**
 * @brief Adds multi-head causal self-attention over @p input [T, 3C] (queries, keys and values side by
 * side, as a linear to 3C makes them) -> [T, C]: position i attends to positions j <= i with
 * softmax(q k / sqrt(C / heads)). Forward keeps 8 bytes per head and position for backward (not the T x T
 * scores). @p dropout: in training, each attention probability is dropped with this rate and the others
 * scaled by 1 / (1 - dropout) (nanoGPT's attn_dropout), the mask keyed by the seed, the step and the global
 * sample as dpt_model_dropout's, so that the split does not change it; 0 = none. Since 0.2.
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist or is not [T, 3C], heads of 0 or not dividing C, T above 8192, a bad or taken name;
 * DPT_ERROR_OUT_OF_RANGE unless 0 <= dropout < 1; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_causal_self_attention(dpt_model *model, size_t input, size_t heads,
                                                   float dropout, const char *name, size_t *out);

/**
 * @brief Adds a batch norm over the channels (dimension 0) of @p input ([c] or [c, h, w]), as PyTorch's
 * BatchNorm2d: y = (x - mean) / sqrt(var + eps) * weight + bias over the batch in training, with the
 * running statistics in evaluation; running = (1 - momentum) * running + momentum * batch. Parameters
 * weight, bias; buffers running_mean, running_var. @p eps and @p momentum are taken at their shortest
 * decimal value (1e-5f is 1e-5).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, an input that is not [c] or [c, h, w], an eps that is not finite and > 0, or
 * a momentum outside [0, 1]; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_batch_norm(dpt_model *model, size_t input, float eps, float momentum,
                                        const char *name, size_t *out);

/**
 * @brief Adds a layer norm over the last dimension of each sample (parameters weight and bias).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, or an eps that is not finite and > 0; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_layer_norm(dpt_model *model, size_t input, float eps, const char *name,
                                        size_t *out);

/**
 * @brief Adds an elementwise activation of @p input.
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, or an unknown activation; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_activation(dpt_model *model, size_t input, dpt_activation activation,
                                        const char *name, size_t *out);

/**
 * @brief Adds a pooling layer over square windows of @p input (no padding; the output size rounds down).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, an unknown kind, an input that is not [c, h, w], a window or stride of 0, or a
 * window larger than the input; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_pool(dpt_model *model, size_t input, dpt_pool_kind kind, size_t window,
                                  size_t stride, const char *name, size_t *out);

/**
 * @brief Adds global average pooling: [c, h, w] -> [c], the mean of each plane.
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, or an input that is not [c, h, w]; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_global_avg_pool(dpt_model *model, size_t input, const char *name, size_t *out);

/**
 * @brief Adds a flatten: any shape -> its size (a view, no copy).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_flatten(dpt_model *model, size_t input, const char *name, size_t *out);

/**
 * @brief Adds inverted dropout of @p input (as dpt_model_add_dropout).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name; DPT_ERROR_OUT_OF_RANGE unless 0 <= rate < 1; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_dropout(dpt_model *model, size_t input, float rate, const char *name,
                                     size_t *out);

/**
 * @brief Adds the elementwise sum of tensors @p a and @p b, which have one shape (a residual join).
 * @return DPT_ERROR_NULL_POINTER for a NULL model; DPT_ERROR_INVALID_ARGUMENT for a tensor that does not
 * exist, a bad or taken name, or shapes that differ; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_add(dpt_model *model, size_t a, size_t b, const char *name, size_t *out);

/**
 * @brief Adds the concatenation of @p count tensors (2 to 4) along dimension 0 (channels); their other
 * dimensions must agree.
 * @return DPT_ERROR_NULL_POINTER for a NULL model or inputs; DPT_ERROR_INVALID_ARGUMENT for a count other
 * than 2 to 4, a tensor that does not exist, a bad or taken name, or shapes that do not agree;
 * DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_concat(dpt_model *model, const size_t *inputs, size_t count, const char *name,
                                    size_t *out);

/* ---- named parameters and buffers (0.2) ------------------------------------------------------------ */

/** @brief The two kinds of named tensors: trainable parameters and buffers (running statistics). */
typedef enum dpt_tensor_kind {
  DPT_TENSOR_PARAMETER = 0, /**< In the flat parameter vector (dpt_trainer_get_parameters). */
  DPT_TENSOR_BUFFER = 1     /**< In the flat buffer vector (dpt_trainer_get_buffers). */
} dpt_tensor_kind;

/**
 * @brief Number of named tensors of @p kind. Parameters lie in node order, each node's in its op's order
 * (weight, then bias), back to back: their offsets and sizes cover the flat vector exactly.
 * @return DPT_ERROR_NULL_POINTER for a NULL model or count; DPT_ERROR_INVALID_ARGUMENT for an unknown kind;
 * DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_named_tensor_count(const dpt_model *model, dpt_tensor_kind kind, size_t *count);

/**
 * @brief The name ("layer1.0.conv1.weight"), offset and shape of named tensor @p index of @p kind.
 * @param model the model.
 * @param kind DPT_TENSOR_PARAMETER or DPT_TENSOR_BUFFER.
 * @param index the tensor's index (0 .. dpt_model_named_tensor_count() - 1).
 * @param name receives the name with its NUL; may be NULL when @p capacity is 0. DPT_MODEL_NAME_CAPACITY
 * bytes are always enough.
 * @param capacity the bytes @p name holds.
 * @param needed receives the bytes the name needs, its NUL included (may be NULL).
 * @param offset receives the index of its first float in the flat parameter (or buffer) vector (may be
 * NULL).
 * @param dims receives its *rank dimensions (its whole shape, e.g. 64, 3, 3, 3); may be NULL when
 * @p dims_capacity is 0.
 * @param dims_capacity the entries @p dims holds.
 * @param rank receives the number of dimensions (may be NULL).
 * @return DPT_ERROR_NULL_POINTER for a NULL model, or a NULL name or dims with a capacity;
 * DPT_ERROR_INVALID_ARGUMENT for an unknown kind; DPT_ERROR_OUT_OF_RANGE when index >= the count;
 * DPT_ERROR_BUFFER_TOO_SMALL (with *needed and *rank set, nothing else written) when capacity < needed or
 * dims_capacity < rank; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_named_tensor(const dpt_model *model, dpt_tensor_kind kind, size_t index,
                                          char *name, size_t capacity, size_t *needed, size_t *offset,
                                          size_t *dims, size_t dims_capacity, size_t *rank);

/**
 * @brief Ties the parameter named @p parameter (e.g. "lm_head.weight") to the parameter named @p source
 * ("transformer.wte.weight"): one tensor, as PyTorch's `lm_head.weight = wte.weight` (GPT-2's tied LM head).
 *
 * Both nodes read the source's values; its gradient is the sum of both nodes' contributions. The tied
 * parameter leaves the flat parameter vector and the named parameters (the count drops by its size; the
 * offsets of later parameters move down); the model's description, JSON ("ties") and checkpoints name the
 * tie. The source must have the same shape and belong to a node added before the parameter's (its gradient
 * is then complete when backward reaches it, so gradient buckets stay exact); a source that is itself tied
 * stands for the parameter it is tied to. Weight decay by matrices (DPT_WEIGHT_DECAY_MATRICES) decays the
 * tensor when either node holds it as a weight matrix. Since 0.2.
 * @return DPT_ERROR_NULL_POINTER for a NULL model, parameter or source; DPT_ERROR_INVALID_ARGUMENT (the model
 * unchanged) for a name that is not "<node>.<parameter>" of the model, a parameter already tied or the
 * source of a tie, shapes that differ, or a source whose node is not before the parameter's; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_tie(dpt_model *model, const char *parameter, const char *source);

/**
 * @brief Number of floats of buffers (running statistics) of one replica; 0 without batch norm.
 * @return DPT_ERROR_NULL_POINTER for a NULL model or count; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_buffer_count(const dpt_model *model, size_t *count);

/* ---- JSON model files (0.2, docs/model-json.md) -------------------------------------------------- */

/**
 * @brief Writes the model as JSON: {"format": "dptrain.model", "version": 1, "input": [...], "nodes":
 * [{"op": ..., "name": ..., "inputs": [...], attributes...}, ...], "output": id}, one node per line,
 * ending with a newline; a model with tied parameters also has "ties": [{"parameter": ..., "source": ...}].
 * dpt_model_from_json reads it back to the same model (describe text, names, parameter count and initial
 * parameters alike).
 * @param model the model.
 * @param buffer may be NULL when @p capacity is 0.
 * @param capacity the bytes @p buffer holds.
 * @param needed receives the length including the terminating NUL (may be NULL).
 * @return DPT_ERROR_NULL_POINTER for a NULL model, or a NULL buffer with a capacity;
 * DPT_ERROR_BUFFER_TOO_SMALL (with *needed set) when capacity is too small; DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_model_to_json(const dpt_model *model, char *buffer, size_t capacity, size_t *needed);

/**
 * @brief Creates the model a JSON text (NUL-terminated, at most 4 MiB) describes.
 *
 * Reads what dpt_model_to_json writes. Strict: no unknown, missing or duplicate keys; every attribute of an
 * op is given; "name" may be left out (the node's index), "output" too (the last node's tensor).
 * @return DPT_ERROR_NULL_POINTER when out or json is NULL; DPT_ERROR_FORMAT when the text is not JSON or
 * not a model description (a wrong type, a missing, unknown or duplicate key, an unknown op, a number out
 * of range, nesting deeper than 16, a text over 4 MiB, more than 65536 nodes); for a well-formed
 * description of a model the builders refuse, the code the builder gives (DPT_ERROR_INVALID_ARGUMENT,
 * DPT_ERROR_OUT_OF_RANGE for a dropout rate). The message names the line, column and node.
 */
DPT_API dpt_status dpt_model_from_json(dpt_model **out, const char *json);

DPT_EXTERN_C_END

#endif /* DPTRAIN_MODEL_H */
