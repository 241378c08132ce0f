/* dptrain.i: the one SWIG interface shared by the Java, C# and Go bindings.
 *
 * It allow-lists the C API: only what is declared or %included below is wrapped, every free dpt_*
 * function is hidden, and each opaque handle becomes a class through %extend (constructor, destructor,
 * methods), so every language sees the same contract. Generated code is produced by the build, never
 * committed.
 *
 * Each language file (java.i, csharp.i, go.i) is included first and must define:
 *   - an %exception handler mapping dptrain_binding::Error (status, category, message) to the language's
 *     error, and rethrowing director exceptions raised in a ProgressListener;
 *   - typemaps for the five (pointer, count) patterns named in CAPITALS below, zero-copy where the
 *     language allows it;
 *   - naming (Java lowerCamelCase as written here, C# PascalCase, Go exported names) and module code. */
%module(directors="1") dptrain

%{
#include <dptrain/dptrain.h>

#include <cstdio>
#include <cstring>

#include "dptrain_binding.hpp"
%}

%include <stdint.i>
%include <std_string.i>

/* size_t is 64-bit on every supported platform; bindings expose it as a 64-bit integer. */
#if defined(SWIGJAVA)
%include "java.i"
#elif defined(SWIGCSHARP)
%include "csharp.i"
#elif defined(SWIGGO)
%include "go.i"
#endif

/* The (pointer, count) patterns every language file implements. */
%apply (const float *IN_FLOATS, size_t IN_COUNT) {
  (const float *inputs, size_t input_count), (const float *params, size_t param_count),
  (const float *weights, size_t weight_count) };
%apply (float *OUT_FLOATS, size_t OUT_COUNT) {
  (float *out_inputs, size_t out_input_count), (float *out_logits, size_t out_logit_count),
  (float *out_params, size_t out_param_count) };
%apply (const int32_t *IN_INTS, size_t IN_COUNT) {
  (const int32_t *labels, size_t label_count), (const int32_t *tokens, size_t token_count),
  (const int32_t *targets, size_t target_count) };
%apply (int32_t *OUT_INTS, size_t OUT_COUNT) {
  (int32_t *out_labels, size_t out_label_count), (int32_t *out_tokens, size_t out_token_count),
  (int32_t *out_targets, size_t out_target_count) };
%apply (const size_t *IN_SIZES, size_t IN_COUNT) { (const size_t *devices, size_t device_count) };

/* ---- Allow-list ---------------------------------------------------------------------------------- */

/* Every free function of the headers is hidden; the handles' methods below call them. */
%rename("$ignore", %$isfunction, %$not %$ismember) "";

/* Fields that are set by the constructors or make no sense across a language boundary. */
%ignore struct_size;
%ignore dpt_trainer_options::devices;
%ignore dpt_trainer_options::device_count;
%ignore dpt_trainer_options::split_weights;
%ignore dpt_fit_options::progress;
%ignore dpt_fit_options::user_data;

%rename(Status) dpt_status;
%rename(DeviceKind) dpt_device_kind;
%rename(DeviceSelection) dpt_device_selection;
%rename(Activation) dpt_activation;
%rename(PoolKind) dpt_pool_kind;
%rename(DatasetPart) dpt_dataset_part;
%rename(SplitPolicy) dpt_split_policy;
%rename(AllReduceAlgorithm) dpt_allreduce_algorithm;
%rename(InitScheme) dpt_init_scheme;
%rename(OptimizerKind) dpt_optimizer_kind;
%rename(ScheduleKind) dpt_schedule_kind;
%rename(ProgressKind) dpt_progress_kind;
%rename(NonfinitePolicy) dpt_nonfinite_policy;
%rename(Communicator) dpt_communicator;
%rename(BatchNormMode) dpt_batch_norm_mode;
%rename(Precision) dpt_precision;
%rename(ShardMode) dpt_shard_mode;
%rename(ShardScope) dpt_shard_scope;
%rename(PipelineSchedule) dpt_pipeline_schedule;
%rename(PipelineScope) dpt_pipeline_scope;
%rename(PipelineBalance) dpt_pipeline_balance;
%rename(TensorKind) dpt_tensor_kind;
%rename(InputType) dpt_input_type;
%rename(WeightDecayScope) dpt_weight_decay_scope;
%rename(DeviceInfo) dpt_device_info;
%rename(BackendInfo) dpt_backend_info;
%rename(ContextOptions) dpt_context_options;
%rename(TrainerOptions) dpt_trainer_options;
%rename(OptimizerOptions) dpt_optimizer_options;
%rename(FitOptions) dpt_fit_options;
%rename(StepResult) dpt_step_result;
%rename(EvalResult) dpt_eval_result;
%rename(FitResult) dpt_fit_result;
%rename(Progress) dpt_progress;
%rename(Context) dpt_context;
%rename(Model) dpt_model;
%rename(Dataset) dpt_dataset;
%rename(Trainer) dpt_trainer;

%immutable dpt_device_info::name;
%immutable dpt_device_info::kind;
%immutable dpt_device_info::pci_bus_id;
%immutable dpt_device_info::product_name;
%immutable dpt_backend_info::kind;
%immutable dpt_backend_info::module_path;
%immutable dpt_backend_info::reason;
%immutable dpt_backend_info::versions;
/* Trainer.replicaMemory's result: each language copies the six counts into its own immutable ReplicaMemory
 * (Java and C# write it by hand, Go copies it into a struct), so the proxy of the C struct takes another name
 * and is internal to the bindings (java.i, csharp.i). */
%rename(ReplicaMemoryNative) dpt_replica_memory;
%immutable dpt_replica_memory::parameters;
%immutable dpt_replica_memory::gradients;
%immutable dpt_replica_memory::optimizer_state;
%immutable dpt_replica_memory::buffers;
%immutable dpt_replica_memory::activations;
%immutable dpt_replica_memory::total;
/* Trainer.replicaTimes's result, the same way: ReplicaTimesNative is internal to the bindings, each language
 * copies the five figures into its own immutable ReplicaTimes. */
%rename(ReplicaTimesNative) dpt_replica_times;
%immutable dpt_replica_times::compute_seconds;
%immutable dpt_replica_times::communication_seconds;
%immutable dpt_replica_times::update_seconds;
%immutable dpt_replica_times::idle_seconds;
%immutable dpt_replica_times::bus_bandwidth;
/* TrainerOptions' pipeline_cuts (the one text field of an options struct): the proxy owns a copy of the text,
 * replaced by each set and freed by the proxy's destructor (below); the C API copies it in its turn when the
 * trainer is created, so the language's string need not outlive the call. */
%typemap(memberin) const char *pipeline_cuts {
  char *copy = dptrain_binding::copyText($input); /* first: a failed copy leaves the old text */
  delete[] $1;
  $1 = copy;
}

/* Enums and value structs straight from the public headers (their functions are ignored above). */
%include <dptrain/export.h>
%include <dptrain/status.h>
%include <dptrain/device.h>
%include <dptrain/model.h>
%include <dptrain/dataset.h>
%include <dptrain/world.h>
%include <dptrain/trainer.h>
%include <dptrain/checkpoint.h>

/* ---- Value structs: constructors fill the defaults and struct_size ------------------------------- */

%define DPT_VALUE_STRUCT(TYPE, INIT)
%extend TYPE {
  TYPE() {
    TYPE *v = new TYPE();
    INIT;
    return v;
  }
  ~TYPE() { delete $self; }
}
%enddef

DPT_VALUE_STRUCT(dpt_context_options, dpt_context_options_init(v))
/* TrainerOptions also frees the copy of pipeline_cuts its setter made (the memberin typemap above). */
%extend dpt_trainer_options {
  dpt_trainer_options() {
    dpt_trainer_options *v = new dpt_trainer_options();
    dpt_trainer_options_init(v);
    return v;
  }
  ~dpt_trainer_options() {
    delete[] $self->pipeline_cuts;
    delete $self;
  }
}
DPT_VALUE_STRUCT(dpt_optimizer_options, dpt_optimizer_options_init(v))
DPT_VALUE_STRUCT(dpt_fit_options, dpt_fit_options_init(v))
DPT_VALUE_STRUCT(dpt_device_info, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_backend_info, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_step_result, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_eval_result, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_fit_result, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_progress, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_replica_memory, v->struct_size = sizeof *v)
DPT_VALUE_STRUCT(dpt_replica_times, v->struct_size = sizeof *v)

/* ---- Handles ------------------------------------------------------------------------------------- */

/* Opaque in C; SWIG only needs to know they are classes. */
struct dpt_context {};
struct dpt_model {};
struct dpt_dataset {};
struct dpt_trainer {};

%feature("director") dptrain_binding::ProgressListener;
%rename(ProgressListener) dptrain_binding::ProgressListener;
namespace dptrain_binding {
class ProgressListener {
 public:
  virtual ~ProgressListener();
  virtual bool onProgress(const dpt_progress &progress) = 0;
};
}

%extend dpt_context {
  /* cpu_devices 0 = DPTRAIN_CPU_DEVICES or the core count; cpu_memory_limit 0 = unlimited. */
  dpt_context(size_t cpu_devices = 0, uint64_t cpu_memory_limit = 0) {
    dpt_context_options o;
    dpt_context_options_init(&o);
    o.cpu_devices = cpu_devices;
    o.cpu_memory_limit = cpu_memory_limit;
    dpt_context *c = NULL;
    dptrain_binding::check(dpt_context_create(&c, &o));
    return c;
  }
  /* The same, choosing the kinds of devices (declared after the one above, so that its generated overload
   * names stay as they were). CUDA devices come from libdptrain_cuda.so; none is not an error. */
  dpt_context(size_t cpu_devices, uint64_t cpu_memory_limit, dpt_device_selection device_selection) {
    dpt_context_options o;
    dpt_context_options_init(&o);
    o.cpu_devices = cpu_devices;
    o.cpu_memory_limit = cpu_memory_limit;
    o.device_selection = device_selection;
    dpt_context *c = NULL;
    dptrain_binding::check(dpt_context_create(&c, &o));
    return c;
  }
  ~dpt_context() { dpt_context_destroy($self); }
  /* How the backend of devices of this kind fared: requested, loaded, device count, and why none. */
  dpt_backend_info backendInfo(dpt_device_kind kind) {
    dpt_backend_info info;
    info.struct_size = sizeof info;
    dptrain_binding::check(dpt_backend_get_info($self, kind, &info));
    return info;
  }
  /* Whether device index can access device peer_index's memory directly (two CUDA devices only). */
  bool canAccessPeer(size_t index, size_t peer_index) {
    int can = 0;
    dptrain_binding::check(dpt_device_can_access_peer($self, index, peer_index, &can));
    return can != 0;
  }
  size_t deviceCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_device_count($self, &n));
    return n;
  }
  dpt_device_info deviceInfo(size_t index) {
    dpt_device_info info;
    info.struct_size = sizeof info;
    dptrain_binding::check(dpt_device_get_info($self, index, &info));
    return info;
  }
}

%newobject dpt_model::builtin;
%newobject dpt_model::fromJson;
%newobject dpt_model::createTokens;
%extend dpt_model {
  dpt_model(size_t channels, size_t height, size_t width) {
    dpt_model *m = NULL;
    dptrain_binding::check(dpt_model_create(&m, channels, height, width));
    return m;
  }
  /* A model whose samples are sequences of sequence_length int32 tokens (tensor 0, read only by
   * tokenEmbedding). A static factory, not a constructor overload, so that the generated names of the
   * constructor above stay as they were. */
  static dpt_model *createTokens(size_t sequence_length) {
    dpt_model *m = NULL;
    dptrain_binding::check(dpt_model_create_tokens(&m, sequence_length));
    return m;
  }
  /* "lenet", "mlp", "resnet18" or "gpt-mini". */
  static dpt_model *builtin(const char *name) {
    dpt_model *m = NULL;
    dptrain_binding::check(dpt_model_create_builtin(&m, name));
    return m;
  }
  static dpt_model *fromJson(const char *json) {
    dpt_model *m = NULL;
    dptrain_binding::check(dpt_model_from_json(&m, json));
    return m;
  }
  ~dpt_model() { dpt_model_destroy($self); }
  void addDense(size_t units) { dptrain_binding::check(dpt_model_add_dense($self, units)); }
  void addConv2d(size_t out_channels, size_t kernel, size_t stride, size_t padding) {
    dptrain_binding::check(dpt_model_add_conv2d($self, out_channels, kernel, stride, padding));
  }
  void addPool(dpt_pool_kind kind, size_t window, size_t stride) {
    dptrain_binding::check(dpt_model_add_pool($self, kind, window, stride));
  }
  void addActivation(dpt_activation activation) {
    dptrain_binding::check(dpt_model_add_activation($self, activation));
  }
  void addFlatten() { dptrain_binding::check(dpt_model_add_flatten($self)); }
  void addDropout(float rate) { dptrain_binding::check(dpt_model_add_dropout($self, rate)); }
  /* The graph builders (model.h): each reads tensors by id (0 is the input) and returns its output's id;
   * name NULL = the node's index. */
  size_t conv2d(size_t input, size_t out_channels, size_t kernel, size_t stride, size_t padding, bool bias,
                const char *name) {
    size_t out = 0;
    dptrain_binding::check(
        dpt_model_conv2d($self, input, out_channels, kernel, stride, padding, bias ? 1 : 0, name, &out));
    return out;
  }
  size_t dense(size_t input, size_t units, bool bias, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_dense($self, input, units, bias ? 1 : 0, name, &out));
    return out;
  }
  /* Over the last dimension ([..., in] -> [..., units]), as PyTorch's nn.Linear. */
  size_t linear(size_t input, size_t units, bool bias, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_linear($self, input, units, bias ? 1 : 0, name, &out));
    return out;
  }
  /* The token input [T] -> [T, features] (parameter weight [vocabulary, features], GPT-2's wte). */
  size_t tokenEmbedding(size_t input, size_t vocabulary, size_t features, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_token_embedding($self, input, vocabulary, features, name, &out));
    return out;
  }
  /* [T, C] + a learned weight [T, C] (GPT-2's wpe). */
  size_t positionEmbedding(size_t input, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_position_embedding($self, input, name, &out));
    return out;
  }
  /* [T, 3C] (queries, keys, values side by side) -> [T, C]; heads divides C; dropout on the attention
   * probabilities in training, 0 = none. */
  size_t causalSelfAttention(size_t input, size_t heads, float dropout, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_causal_self_attention($self, input, heads, dropout, name, &out));
    return out;
  }
  size_t batchNorm(size_t input, float eps, float momentum, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_batch_norm($self, input, eps, momentum, name, &out));
    return out;
  }
  size_t layerNorm(size_t input, float eps, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_layer_norm($self, input, eps, name, &out));
    return out;
  }
  size_t activation(size_t input, dpt_activation activation, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_activation($self, input, activation, name, &out));
    return out;
  }
  size_t pool(size_t input, dpt_pool_kind kind, size_t window, size_t stride, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_pool($self, input, kind, window, stride, name, &out));
    return out;
  }
  size_t globalAvgPool(size_t input, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_global_avg_pool($self, input, name, &out));
    return out;
  }
  size_t flatten(size_t input, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_flatten($self, input, name, &out));
    return out;
  }
  size_t dropout(size_t input, float rate, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_dropout($self, input, rate, name, &out));
    return out;
  }
  size_t add(size_t a, size_t b, const char *name) {
    size_t out = 0;
    dptrain_binding::check(dpt_model_add($self, a, b, name, &out));
    return out;
  }
  /* Two to four tensors along the channel dimension. */
  size_t concat2(size_t a, size_t b, const char *name) {
    const size_t inputs[2] = {a, b};
    size_t out = 0;
    dptrain_binding::check(dpt_model_concat($self, inputs, 2, name, &out));
    return out;
  }
  size_t concat3(size_t a, size_t b, size_t c, const char *name) {
    const size_t inputs[3] = {a, b, c};
    size_t out = 0;
    dptrain_binding::check(dpt_model_concat($self, inputs, 3, name, &out));
    return out;
  }
  /* Ties the parameter named parameter ("lm_head.weight") to the parameter named source of an earlier node
   * ("transformer.wte.weight"): one tensor, as PyTorch's lm_head.weight = wte.weight. The tied parameter
   * leaves the flat parameter vector and the named parameters. Named tieParameter, not tie: SWIG names an
   * %extend helper <struct>_<method>, and dpt_model_tie is the C function; each language names it (Java
   * tie, C# Tie over the private TieNative, Go's Model.Tie over TieParameter). */
  void tieParameter(const char *parameter, const char *source) {
    dptrain_binding::check(dpt_model_tie($self, parameter, source));
  }
  size_t outputTensor() {
    size_t t = 0;
    dptrain_binding::check(dpt_model_output($self, &t));
    return t;
  }
  void setOutput(size_t tensor) { dptrain_binding::check(dpt_model_set_output($self, tensor)); }
  size_t tensorCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_model_tensor_count($self, &n));
    return n;
  }
  /* One sample's dims of a tensor, as "c,h,w" text (parse per language; e.g. "64,28,28"). */
  std::string tensorShape(size_t tensor) {
    size_t dims[DPT_MODEL_MAX_RANK], rank = 0;
    dptrain_binding::check(dpt_model_tensor_shape($self, tensor, dims, DPT_MODEL_MAX_RANK, &rank));
    std::string text;
    for (size_t i = 0; i < rank; ++i) {
      if (i != 0) text += ',';
      text += std::to_string(dims[i]);
    }
    return text;
  }
  size_t bufferCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_model_buffer_count($self, &n));
    return n;
  }
  size_t namedTensorCount(dpt_tensor_kind kind) {
    size_t n = 0;
    dptrain_binding::check(dpt_model_named_tensor_count($self, kind, &n));
    return n;
  }
  std::string namedTensorName(dpt_tensor_kind kind, size_t index) {
    char name[DPT_MODEL_NAME_CAPACITY];
    size_t needed = 0, offset = 0, dims[DPT_MODEL_MAX_RANK], rank = 0;
    dptrain_binding::check(dpt_model_named_tensor($self, kind, index, name, sizeof name, &needed, &offset, dims,
                                                  DPT_MODEL_MAX_RANK, &rank));
    return name;
  }
  /* Offset of a named tensor in the flat parameter (or buffer) vector. */
  size_t namedTensorOffset(dpt_tensor_kind kind, size_t index) {
    char name[DPT_MODEL_NAME_CAPACITY];
    size_t needed = 0, offset = 0, dims[DPT_MODEL_MAX_RANK], rank = 0;
    dptrain_binding::check(dpt_model_named_tensor($self, kind, index, name, sizeof name, &needed, &offset, dims,
                                                  DPT_MODEL_MAX_RANK, &rank));
    return offset;
  }
  /* Its shape as "d0,d1,..." text. */
  std::string namedTensorShape(dpt_tensor_kind kind, size_t index) {
    char name[DPT_MODEL_NAME_CAPACITY];
    size_t needed = 0, offset = 0, dims[DPT_MODEL_MAX_RANK], rank = 0;
    dptrain_binding::check(dpt_model_named_tensor($self, kind, index, name, sizeof name, &needed, &offset, dims,
                                                  DPT_MODEL_MAX_RANK, &rank));
    std::string text;
    for (size_t i = 0; i < rank; ++i) {
      if (i != 0) text += ',';
      text += std::to_string(dims[i]);
    }
    return text;
  }
  std::string toJson() {
    size_t needed = 0;
    dpt_status s = dpt_model_to_json($self, NULL, 0, &needed);
    if (s != DPT_ERROR_BUFFER_TOO_SMALL) dptrain_binding::check(s);
    std::string text(needed, '\0');
    dptrain_binding::check(dpt_model_to_json($self, &text[0], needed, &needed));
    text.resize(needed - 1);
    return text;
  }
  size_t inputSize() {
    size_t n = 0;
    dptrain_binding::check(dpt_model_input_size($self, &n));
    return n;
  }
  /* Float32 values or int32 tokens. */
  dpt_input_type inputType() {
    dpt_input_type t = DPT_INPUT_FLOAT32;
    dptrain_binding::check(dpt_model_input_type($self, &t));
    return t;
  }
  size_t outputSize() {
    size_t n = 0;
    dptrain_binding::check(dpt_model_output_size($self, &n));
    return n;
  }
  size_t parameterCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_model_parameter_count($self, &n));
    return n;
  }
  size_t layerCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_model_layer_count($self, &n));
    return n;
  }
  std::string describe() {
    size_t needed = 0;
    dpt_status s = dpt_model_describe($self, NULL, 0, &needed);
    if (s != DPT_ERROR_BUFFER_TOO_SMALL) dptrain_binding::check(s);
    std::string text(needed, '\0');
    dptrain_binding::check(dpt_model_describe($self, &text[0], needed, &needed));
    text.resize(needed - 1);
    return text;
  }
}

/* The two parts of a text (dpt_dataset_load_text), handed over one at a time (dptrain_binding.hpp). Each
 * language wraps Dataset.loadText around it; the class itself is internal to the bindings. */
%nodefaultctor dptrain_binding::TextParts;
%newobject dptrain_binding::TextParts::takeTrain;
%newobject dptrain_binding::TextParts::takeValidation;
%rename(TextParts) dptrain_binding::TextParts;
namespace dptrain_binding {
class TextParts {
 public:
  ~TextParts();
  dpt_dataset *takeTrain();
  dpt_dataset *takeValidation();
};
}

%newobject dpt_dataset::loadIdx;
%newobject dpt_dataset::loadFashionMnist;
%newobject dpt_dataset::subset;
%newobject dpt_dataset::createTokens;
%newobject dpt_dataset::loadText;
%extend dpt_dataset {
  /* Copies the caller's arrays: label_count samples of channels x height x width floats. */
  dpt_dataset(const float *inputs, size_t input_count, const int32_t *labels, size_t label_count,
              size_t channels, size_t height, size_t width, size_t classes) {
    dpt_dataset *d = NULL;
    dptrain_binding::check(
        dpt_dataset_create(&d, inputs, input_count, labels, label_count, channels, height, width, classes));
    return d;
  }
  /* Copies the caller's arrays: sample_count sequences of sequence_length tokens, each in [0, vocabulary), and
   * one target per position (sample_count * sequence_length) or per sample, each in [0, vocabulary) or
   * DPT_IGNORE_LABEL. A static factory (the constructor above keeps its generated names). */
  static dpt_dataset *createTokens(const int32_t *tokens, size_t token_count, const int32_t *targets,
                                   size_t target_count, size_t sample_count, size_t sequence_length,
                                   size_t vocabulary) {
    dpt_dataset *d = NULL;
    dptrain_binding::check(dpt_dataset_create_tokens(&d, tokens, token_count, targets, target_count, sample_count,
                                                     sequence_length, vocabulary));
    return d;
  }
  /* Byte-level text cut into windows of context_length + 1 bytes; the last validation_fraction of the bytes
   * make the validation part. */
  static dptrain_binding::TextParts *loadText(const char *path, size_t context_length, double validation_fraction) {
    return new dptrain_binding::TextParts(path, context_length, validation_fraction);
  }
  static dpt_dataset *loadIdx(const char *images_path, const char *labels_path) {
    dpt_dataset *d = NULL;
    dptrain_binding::check(dpt_dataset_load_idx(&d, images_path, labels_path));
    return d;
  }
  /* directory NULL = DPTRAIN_DATA_DIR or /usr/share/datasets/fashion-mnist. */
  static dpt_dataset *loadFashionMnist(const char *directory, dpt_dataset_part part) {
    dpt_dataset *d = NULL;
    dptrain_binding::check(dpt_dataset_load_fashion_mnist(&d, directory, part));
    return d;
  }
  ~dpt_dataset() { dpt_dataset_destroy($self); }
  dpt_dataset *subset(size_t start, size_t count) {
    dpt_dataset *d = NULL;
    dptrain_binding::check(dpt_dataset_subset(&d, $self, start, count));
    return d;
  }
  size_t sampleCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_dataset_sample_count($self, &n));
    return n;
  }
  size_t channels() {
    size_t c = 0;
    dptrain_binding::check(dpt_dataset_shape($self, &c, NULL, NULL));
    return c;
  }
  size_t height() {
    size_t h = 0;
    dptrain_binding::check(dpt_dataset_shape($self, NULL, &h, NULL));
    return h;
  }
  size_t width() {
    size_t w = 0;
    dptrain_binding::check(dpt_dataset_shape($self, NULL, NULL, &w));
    return w;
  }
  size_t classCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_dataset_class_count($self, &n));
    return n;
  }
  void copyBatch(size_t start, size_t count, float *out_inputs, size_t out_input_count, int32_t *out_labels,
                 size_t out_label_count) {
    dptrain_binding::check(dpt_dataset_copy_batch($self, start, count, out_inputs, out_input_count, out_labels,
                                                  out_label_count));
  }
  /* Float32 values or int32 tokens. */
  dpt_input_type inputType() {
    dpt_input_type t = DPT_INPUT_FLOAT32;
    dptrain_binding::check(dpt_dataset_input_type($self, &t));
    return t;
  }
  /* 1 for a classification dataset, the sequence length for next-token targets. */
  size_t targetsPerSample() {
    size_t n = 0;
    dptrain_binding::check(dpt_dataset_targets_per_sample($self, &n));
    return n;
  }
  /* Samples [start, start + count) of a token dataset: count * sequence length tokens, count * targets per
   * sample targets. */
  void copyTokens(size_t start, size_t count, int32_t *out_tokens, size_t out_token_count, int32_t *out_targets,
                  size_t out_target_count) {
    dptrain_binding::check(dpt_dataset_copy_tokens($self, start, count, out_tokens, out_token_count, out_targets,
                                                   out_target_count));
  }
}

%extend dpt_trainer {
  /* options / optimizer may be null (defaults). */
  dpt_trainer(dpt_context *context, dpt_model *model, const dpt_trainer_options *options,
              const dpt_optimizer_options *optimizer) {
    dpt_trainer *t = NULL;
    dptrain_binding::check(dpt_trainer_create(&t, context, model, options, optimizer));
    return t;
  }
  /* The same, on the listed devices of the context, with split weights (used with SPLIT_WEIGHTED;
   * pass an empty array otherwise). */
  dpt_trainer(dpt_context *context, dpt_model *model, const dpt_trainer_options *options,
              const dpt_optimizer_options *optimizer, const size_t *devices, size_t device_count,
              const float *weights, size_t weight_count) {
    dpt_trainer_options o;
    dpt_trainer_options_init(&o);
    if (options != NULL) o = *options;
    o.struct_size = sizeof o;
    o.devices = device_count != 0 ? devices : NULL; /* an empty array: every device */
    o.device_count = device_count;
    if (weight_count != 0) {  /* the C API reads one weight per device: check the count here */
      size_t expected = device_count;
      if (expected == 0) dptrain_binding::check(dpt_device_count(context, &expected));
      if (weight_count != expected)
        throw dptrain_binding::Error(DPT_ERROR_SIZE_MISMATCH, "dpt_trainer_create: " + std::to_string(weight_count) +
                                                                  " split weights for " + std::to_string(expected) +
                                                                  " devices");
    }
    o.split_weights = weight_count != 0 ? weights : NULL;
    dpt_trainer *t = NULL;
    dptrain_binding::check(dpt_trainer_create(&t, context, model, &o, optimizer));
    return t;
  }
  ~dpt_trainer() { dpt_trainer_destroy($self); }
  /* One (micro-)batch: label_count samples. */
  dpt_step_result step(const float *inputs, size_t input_count, const int32_t *labels, size_t label_count) {
    dpt_step_result r;
    r.struct_size = sizeof r;
    dptrain_binding::check(dpt_trainer_step($self, inputs, input_count, labels, label_count, &r));
    return r;
  }
  dpt_eval_result evaluate(const float *inputs, size_t input_count, const int32_t *labels, size_t label_count) {
    dpt_eval_result r;
    r.struct_size = sizeof r;
    dptrain_binding::check(dpt_trainer_evaluate($self, inputs, input_count, labels, label_count, &r));
    return r;
  }
  /* One (micro-)batch of batch_size token sequences (token models): batch_size * sequence length tokens and
   * batch_size * targets per sample targets (DPT_IGNORE_LABEL: not counted). */
  dpt_step_result stepTokens(const int32_t *tokens, size_t token_count, const int32_t *targets, size_t target_count,
                             size_t batch_size) {
    dpt_step_result r;
    r.struct_size = sizeof r;
    dptrain_binding::check(
        dpt_trainer_step_tokens($self, tokens, token_count, targets, target_count, batch_size, &r));
    return r;
  }
  dpt_eval_result evaluateTokens(const int32_t *tokens, size_t token_count, const int32_t *targets,
                                 size_t target_count, size_t sample_count) {
    dpt_eval_result r;
    r.struct_size = sizeof r;
    dptrain_binding::check(
        dpt_trainer_evaluate_tokens($self, tokens, token_count, targets, target_count, sample_count, &r));
    return r;
  }
  /* The logits of every position: sample_count * output size floats. */
  void predictTokens(const int32_t *tokens, size_t token_count, size_t sample_count, float *out_logits,
                     size_t out_logit_count) {
    dptrain_binding::check(
        dpt_trainer_predict_tokens($self, tokens, token_count, sample_count, out_logits, out_logit_count));
  }
  dpt_eval_result evaluateDataset(dpt_dataset *dataset, size_t batch_size) {
    dpt_eval_result r;
    r.struct_size = sizeof r;
    dptrain_binding::check(dpt_trainer_evaluate_dataset($self, dataset, batch_size, &r));
    return r;
  }
  /* The batch norms' running statistics recomputed from the first sample_count samples of dataset (0: all)
   * in batches of batch_size (0 = 256), each the plain average of the batches' (PyTorch's update_bn); the
   * parameters do not change. A model without batch norm: nothing to do. */
  void recomputeBatchNorm(dpt_dataset *dataset, size_t batch_size, size_t sample_count) {
    dptrain_binding::check(dpt_trainer_recompute_batch_norm($self, dataset, batch_size, sample_count));
  }
  /* const: SWIG names this method's helper dpt_trainer_predict, like the C function with the same
   * parameters; the const self makes it a distinct overload (the wrapper passes a const pointer, so it
   * calls the helper; the helper's non-const pointer calls the C function). */
  void predict(const float *inputs, size_t input_count, size_t sample_count, float *out_logits,
               size_t out_logit_count) const {
    dptrain_binding::check(dpt_trainer_predict(const_cast<dpt_trainer *>($self), inputs, input_count, sample_count,
                                               out_logits, out_logit_count));
  }
  /* test and options may be null; listener may be null. An exception thrown by the listener stops
   * training and is rethrown here. */
  dpt_fit_result fit(dpt_dataset *train, dpt_dataset *test, const dpt_fit_options *options,
                     dptrain_binding::ProgressListener *listener) {
    dpt_fit_options o;
    dpt_fit_options_init(&o);
    if (options != NULL) o = *options;
    o.struct_size = sizeof o;
    dptrain_binding::ProgressBridge bridge{listener, nullptr};
    o.progress = listener != NULL ? &dptrain_binding::ProgressBridge::call : NULL;
    o.user_data = &bridge;
    dpt_fit_result r;
    r.struct_size = sizeof r;
    dpt_status s = dpt_trainer_fit($self, train, test, &o, &r);
    if (bridge.error) std::rethrow_exception(bridge.error);
    dptrain_binding::check(s);
    return r;
  }
  size_t parameterCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_trainer_parameter_count($self, &n));
    return n;
  }
  size_t deviceCount() {
    size_t n = 0;
    dptrain_binding::check(dpt_trainer_device_count($self, &n));
    return n;
  }
  /* Where the pipeline's stages after the first begin, comma-separated ("" without a pipeline). */
  std::string pipelineCuts() {
    size_t needed = 0;
    dpt_status s = dpt_trainer_pipeline_cuts($self, NULL, 0, &needed);
    if (s != DPT_ERROR_BUFFER_TOO_SMALL) dptrain_binding::check(s);
    std::string text(needed, '\0');
    dptrain_binding::check(dpt_trainer_pipeline_cuts($self, &text[0], needed, &needed));
    text.resize(needed - 1);
    return text;
  }
  void getParameters(float *out_params, size_t out_param_count) {
    dptrain_binding::check(dpt_trainer_get_parameters($self, out_params, out_param_count));
  }
  void getReplicaParameters(size_t replica, float *out_params, size_t out_param_count) {
    dptrain_binding::check(dpt_trainer_get_replica_parameters($self, replica, out_params, out_param_count));
  }
  void setParameters(const float *params, size_t param_count) {
    dptrain_binding::check(dpt_trainer_set_parameters($self, params, param_count));
  }
  /* The bytes replica device (0 .. deviceCount() - 1) holds now, by what they are for; a device out of range
   * is DPT_ERROR_OUT_OF_RANGE. Each language returns its own immutable copy (java.i, csharp.i, Go's
   * Trainer.ReplicaMemory). */
  dpt_replica_memory replicaMemory(size_t device) {
    dpt_replica_memory m;
    m.struct_size = sizeof m;
    dptrain_binding::check(dpt_trainer_replica_memory($self, device, &m));
    return m;
  }
  /* Replica device's share of the last step call, in seconds (compute, communication, update, idle) and its
   * reduction's bus bandwidth (bytes per second); all 0 before the first step; a device out of range is
   * DPT_ERROR_OUT_OF_RANGE. Each language returns its own immutable copy (java.i, csharp.i, Go's
   * Trainer.ReplicaTimes). */
  dpt_replica_times replicaTimes(size_t device) {
    dpt_replica_times t;
    t.struct_size = sizeof t;
    dptrain_binding::check(dpt_trainer_replica_times($self, device, &t));
    return t;
  }
  /* The same figures summed over every step call since the trainer was made (fits' steps included); the bus
   * bandwidth is the bytes of all its reductions over their seconds. */
  dpt_replica_times replicaTotals(size_t device) {
    dpt_replica_times t;
    t.struct_size = sizeof t;
    dptrain_binding::check(dpt_trainer_replica_totals($self, device, &t));
    return t;
  }
  /* The timeline (docs/profiling.md): traceStart records from the next call on, up to max_events (1 to 2^24)
   * per device and thread; traceWrite stops it and writes Chrome trace-event JSON to path (INVALID_STATE
   * when no recording runs, IO when the file cannot be written). The names differ from the C functions'
   * (SWIG names an %extend helper <struct>_<method>). */
  void traceStart(size_t max_events) { dptrain_binding::check(dpt_trainer_trace_start($self, max_events)); }
  void traceWrite(const char *path) { dptrain_binding::check(dpt_trainer_trace_write($self, path)); }
  /* FNV-1a 64 of the parameter bytes as 16 lowercase hex digits, as the CLI prints it. */
  std::string parameterChecksum() {
    uint64_t sum = 0;
    dptrain_binding::check(dpt_trainer_parameter_checksum($self, &sum));
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", (unsigned long long)sum);
    return text;
  }
  /* Checkpoints (dptrain/checkpoint.h). The method names differ from the C functions' on purpose: SWIG
   * names an %extend helper <struct>_<method>, which must not collide with a C function. */
  void saveCheckpoint(const char *path) { dptrain_binding::check(dpt_trainer_save($self, path)); }
  void loadCheckpoint(const char *path) { dptrain_binding::check(dpt_trainer_load($self, path)); }
  /* Named parameters and running statistics as safetensors (PyTorch's format). */
  void saveSafetensors(const char *path) { dptrain_binding::check(dpt_trainer_save_safetensors($self, path)); }
  void loadSafetensors(const char *path) { dptrain_binding::check(dpt_trainer_load_safetensors($self, path)); }
  /* The running statistics (the model's bufferCount() floats). */
  void getBuffers(float *out_params, size_t out_param_count) {
    dptrain_binding::check(dpt_trainer_get_buffers($self, out_params, out_param_count));
  }
  void setBuffers(const float *params, size_t param_count) {
    dptrain_binding::check(dpt_trainer_set_buffers($self, params, param_count));
  }
  uint64_t epochCount() {
    uint64_t n = 0;
    dptrain_binding::check(dpt_trainer_epoch_count($self, &n));
    return n;
  }
  uint64_t stepCount() {
    uint64_t n = 0;
    dptrain_binding::check(dpt_trainer_step_count($self, &n));
    return n;
  }
}

/* Library-level helpers. The blanket ignore of free functions above hides them too: each language file
 * names them explicitly (versionNumber, or VersionNumber in C# and Go), which also sets the language's case. */
%inline %{
namespace dptrain_binding {
inline unsigned versionNumber() { return dpt_version_number(); }
inline std::string versionString() { return dpt_version_string(); }
inline std::string statusString(int status) {
  dpt_status s;  // any int: copied, not cast (an out-of-range enum value would be undefined)
  std::memcpy(&s, &status, sizeof s);
  return dpt_status_string(s);
}
}
%}
