/* java.i: the Java part of dptrain.i (included from it, before any declaration is wrapped).
 *
 * Package org.dptrain (swig -package org.dptrain -module Dptrain, see bindings/java/CMakeLists.txt):
 *   - handles (Context, Model, Dataset, Trainer) are AutoCloseable; close() is the destructor, idempotent;
 *     a call on a closed handle throws InvalidArgumentException ("... is closed"), never a crash;
 *   - a failed status becomes DptrainException.of(...): one subclass per status category;
 *   - (pointer, count) patterns: float[] / int[] pinned with GetPrimitiveArrayCritical (zero-copy), direct
 *     FloatBuffer / IntBuffer overloads (zero-copy), long[] for device lists; null, negative sizes and
 *     non-direct buffers are rejected with a clear message;
 *   - size_t is a Java long (negative values are rejected), uint64_t a Java long holding the same 64 bits;
 *   - naming: fields lowerCamelCase (getLearningRate), enum items and constants without DPT_.
 *
 * A wrapper never throws while a Java array is pinned: the %exception handler releases the pinned arrays
 * ($cleanup) before it raises the Java exception, because no JNI call is allowed inside a critical region.
 */

%include <enums.swg>
%javaconst(1);

/* ---- Naming -------------------------------------------------------------------------------------- */

%rename("%(lowercamelcase)s", %$isvariable) "";
%rename("%(strip:[DPT_])s", %$isenumitem) "";
%rename("%(strip:[DPT_])s", %$isconstant) "";

/* dptrain.i hides every free function ("$ignore" for non-members), its own %inline helpers included; an
 * explicit %rename takes precedence over that pattern, so these stay wrapped (as Dptrain.versionString() ...). */
%rename(versionNumber) dptrain_binding::versionNumber;
%rename(versionString) dptrain_binding::versionString;
%rename(statusString) dptrain_binding::statusString;

%pragma(java) jniclassclassmodifiers = "final class"
%pragma(java) moduleclassmodifiers = "public final class"
%pragma(java) jniclasscode = %{
  static {
    NativeLoader.load();
  }
%}
%pragma(java) modulecode = %{
  private Dptrain() {}
%}

/* The C ints that are booleans. */
%apply bool { int nesterov, int applied, int stopped, int has_test, int skipped_overflow };

/* uint64_t (seeds, byte counts, step counters) as a Java long with the same 64 bits. */
%apply long long { uint64_t };
%apply const long long & { const uint64_t & };

/* ---- Support code -------------------------------------------------------------------------------- */

%{
#include <cstring>
#include <string>

namespace dptrain_java {

/* "Trainer_step" -> "Trainer.step", "new_Trainer" -> "new Trainer", "FitOptions_epochs_set" -> "FitOptions.epochs". */
static std::string pretty_name(const char *symname) {
  std::string s(symname);
  if (s.compare(0, 4, "new_") == 0) return "new " + s.substr(4);
  const size_t set = s.rfind("_set");
  if (set != std::string::npos && set + 4 == s.size()) s.erase(set);
  const size_t get = s.rfind("_get");
  if (get != std::string::npos && get + 4 == s.size()) s.erase(get);
  const size_t underscore = s.find('_');
  if (underscore != std::string::npos) s[underscore] = '.';
  return s;
}

/* Java wants modified UTF-8: keep ASCII, replace anything else. */
static std::string ascii(const char *text) {
  std::string s(text != NULL ? text : "");
  for (char &c : s) {
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\0') c = '?';
  }
  return s;
}

/* Raises org.dptrain.DptrainException.of(status, category, statusName, message) in the calling thread.
 * Keeps an exception that is already pending. */
static void throw_status(JNIEnv *env, int status, const std::string &message) {
  if (env->ExceptionCheck()) return;
  jclass cls = env->FindClass("org/dptrain/DptrainException");
  if (cls == NULL) return; /* NoClassDefFoundError is pending */
  jmethodID of = env->GetStaticMethodID(cls, "of", "(IILjava/lang/String;Ljava/lang/String;)Lorg/dptrain/DptrainException;");
  if (of == NULL) {
    env->DeleteLocalRef(cls);
    return;
  }
  const dpt_status s = static_cast<dpt_status>(status);
  jstring name = env->NewStringUTF(ascii(dpt_status_string(s)).c_str());
  jstring text = name != NULL ? env->NewStringUTF(ascii(message.c_str()).c_str()) : NULL;
  if (text != NULL) {
    jobject error = env->CallStaticObjectMethod(cls, of, (jint)status, (jint)dpt_status_category(s), name, text);
    if (error != NULL && !env->ExceptionCheck()) env->Throw(static_cast<jthrowable>(error));
    if (error != NULL) env->DeleteLocalRef(error);
  }
  if (text != NULL) env->DeleteLocalRef(text);
  if (name != NULL) env->DeleteLocalRef(name);
  env->DeleteLocalRef(cls);
}

static void throw_closed(JNIEnv *env, const char *symname) {
  std::string where = pretty_name(symname);
  std::string type = where.substr(0, where.find('.'));
  throw_status(env, DPT_ERROR_NULL_POINTER, where + ": this " + type + " is closed");
}

static bool check_size(JNIEnv *env, jlong value, const char *symname, const char *name) {
  if (value >= 0) return true;
  throw_status(env, DPT_ERROR_OUT_OF_RANGE,
               pretty_name(symname) + ": " + name + " must not be negative (got " + std::to_string((long long)value) + ")");
  return false;
}

/* A float[] / int[] argument pinned with GetPrimitiveArrayCritical, or a direct buffer's memory.
 * bind() (in typemap) validates and may throw; pin() (check typemap, after every argument is validated)
 * enters the critical region; unpin() (freearg, and $cleanup on failure) leaves it. The destructor is a
 * safety net for paths that return without the cleanup. */
class ArrayArg {
 public:
  ArrayArg() = default;
  ArrayArg(const ArrayArg &) = delete;
  ArrayArg &operator=(const ArrayArg &) = delete;
  ~ArrayArg() { unpin(); }

  bool bind(JNIEnv *env, jobject object, const char *symname, const char *name) {
    env_ = env;
    if (object == NULL) {
      throw_status(env, DPT_ERROR_NULL_POINTER, pretty_name(symname) + ": " + name + " must not be null");
      return false;
    }
    void *address = env->GetDirectBufferAddress(object); /* NULL unless a direct java.nio.Buffer */
    if (address != NULL) {
      data_ = address;
      count_ = static_cast<size_t>(env->GetDirectBufferCapacity(object));
      return true;
    }
    array_ = static_cast<jarray>(object);
    count_ = static_cast<size_t>(env->GetArrayLength(array_));
    return true;
  }
  bool pin(jint release_mode) {
    if (array_ == NULL) return true;
    mode_ = release_mode;
    data_ = env_->GetPrimitiveArrayCritical(array_, NULL);
    pinned_ = data_ != NULL; /* NULL: OutOfMemoryError is pending */
    return pinned_;
  }
  void unpin() {
    if (!pinned_) return;
    pinned_ = false;
    env_->ReleasePrimitiveArrayCritical(array_, data_, mode_);
  }
  void *data() const { return data_; }
  size_t count() const { return count_; }

 private:
  JNIEnv *env_ = NULL;
  jarray array_ = NULL;
  void *data_ = NULL;
  size_t count_ = 0;
  jint mode_ = 0;
  bool pinned_ = false;
};

}  // namespace dptrain_java
%}

/* ---- Errors -------------------------------------------------------------------------------------- */

%exception {
  try {
    $action
  } catch (const dptrain_binding::Error &e) {
    $cleanup
    dptrain_java::throw_status(jenv, e.status(), e.what());
    return $null;
  } catch (Swig::DirectorException &e) {
    $cleanup
    e.throwException(jenv);
    return $null;
  } catch (const std::bad_alloc &) {
    $cleanup
    dptrain_java::throw_status(jenv, DPT_ERROR_OUT_OF_MEMORY, dptrain_java::pretty_name("$symname") + ": out of host memory");
    return $null;
  } catch (const std::exception &e) {
    $cleanup
    dptrain_java::throw_status(jenv, DPT_ERROR_INTERNAL, dptrain_java::pretty_name("$symname") + ": " + e.what());
    return $null;
  } catch (...) {
    $cleanup
    dptrain_java::throw_status(jenv, DPT_ERROR_INTERNAL, dptrain_java::pretty_name("$symname") + ": unknown C++ exception");
    return $null;
  }
}

/* A method called on a closed proxy passes a NULL self: say so instead of letting the C API see NULL. */
%typemap(check) SWIGTYPE *self %{
  if ($1 == NULL) {
    dptrain_java::throw_closed(jenv, "$symname");
    return $null;
  }
%}

/* Sizes and indices: a negative Java long is an error, not a huge size_t. */
%typemap(in) size_t %{
  if (!dptrain_java::check_size(jenv, $input, "$symname", "$1_name")) return $null;
  $1 = (size_t)$input;
%}

/* ---- (pointer, count) patterns ------------------------------------------------------------------- */

%define DPTRAIN_JAVA_ARRAY(CTYPE, JAVATYPE, RELEASE, PATTERN)
%typemap(jni) PATTERN "jobject"
%typemap(jtype) PATTERN "Object"
%typemap(jstype) PATTERN "JAVATYPE[]"
%typemap(javain) PATTERN "$javainput"
%typemap(in) PATTERN (dptrain_java::ArrayArg array) %{
  if (!array.bind(jenv, $input, "$symname", "$1_name")) return $null;
  $2 = array.count();
%}
%typemap(check) PATTERN %{
  if (!array$argnum.pin(RELEASE)) {
    $cleanup
    return $null;
  }
  $1 = (CTYPE *)array$argnum.data();
%}
%typemap(freearg) PATTERN %{
  array$argnum.unpin();
%}
%enddef

/* Inputs are released without copying back (JNI_ABORT), outputs with mode 0 (copied back if the JVM copied). */
DPTRAIN_JAVA_ARRAY(float, float, JNI_ABORT, (const float *IN_FLOATS, size_t IN_COUNT))
DPTRAIN_JAVA_ARRAY(float, float, 0, (float *OUT_FLOATS, size_t OUT_COUNT))
DPTRAIN_JAVA_ARRAY(int32_t, int, JNI_ABORT, (const int32_t *IN_INTS, size_t IN_COUNT))
DPTRAIN_JAVA_ARRAY(int32_t, int, 0, (int32_t *OUT_INTS, size_t OUT_COUNT))

/* Device lists are short: copied (and checked for negative entries) rather than pinned. */
%typemap(jni) (const size_t *IN_SIZES, size_t IN_COUNT) "jlongArray"
%typemap(jtype) (const size_t *IN_SIZES, size_t IN_COUNT) "long[]"
%typemap(jstype) (const size_t *IN_SIZES, size_t IN_COUNT) "long[]"
%typemap(javain) (const size_t *IN_SIZES, size_t IN_COUNT) "$javainput"
%typemap(in) (const size_t *IN_SIZES, size_t IN_COUNT) (std::vector<size_t> sizes) %{
  if ($input == NULL) {
    dptrain_java::throw_status(jenv, DPT_ERROR_NULL_POINTER,
                               dptrain_java::pretty_name("$symname") + ": $1_name must not be null (pass an empty array)");
    return $null;
  }
  {
    const jsize n = jenv->GetArrayLength($input);
    std::vector<jlong> values((size_t)n);
    if (n > 0) jenv->GetLongArrayRegion($input, 0, n, values.data());
    for (jsize i = 0; i < n; ++i) {
      if (values[(size_t)i] < 0) {
        dptrain_java::throw_status(jenv, DPT_ERROR_OUT_OF_RANGE,
                                   dptrain_java::pretty_name("$symname") + ": $1_name[" + std::to_string(i) +
                                       "] must not be negative (got " + std::to_string((long long)values[(size_t)i]) + ")");
        return $null;
      }
      sizes.push_back((size_t)values[(size_t)i]);
    }
  }
  $1 = sizes.data();
  $2 = sizes.size();
%}
%{
#include <vector>
%}

/* ---- Proxy classes ------------------------------------------------------------------------------- */

/* Every proxy: a closed (or deleted) object passed as an argument is an error, not a silent NULL. */
%typemap(javabody) SWIGTYPE %{
  private transient long swigCPtr;
  protected transient boolean swigCMemOwn;

  protected $javaclassname(long cPtr, boolean cMemoryOwn) {
    swigCMemOwn = cMemoryOwn;
    swigCPtr = cPtr;
  }

  protected static long getCPtr($javaclassname obj) {
    return (obj == null) ? 0 : obj.swigCPtr;
  }

  /** The native pointer of an argument: 0 for null, an error for a closed object. */
  static long swigArg($javaclassname obj, String name) {
    if (obj == null) return 0;
    long p = obj.swigCPtr;
    if (p == 0) throw DptrainException.closed(name + ": this $javaclassname is closed");
    return p;
  }

  /** True once close() (or delete()) has released the native object. */
  public synchronized boolean isClosed() {
    return swigCPtr == 0;
  }
%}
%typemap(javain) SWIGTYPE *, SWIGTYPE & "$javaclassname.swigArg($javainput, \"$javainput\")"

/* Handles: AutoCloseable; close() is the destructor (idempotent); finalize() is only a safety net. */
%define DPTRAIN_JAVA_HANDLE(TYPE)
%typemap(javainterfaces) TYPE "AutoCloseable"
%typemap(javadestruct, methodname="close", methodmodifiers="public synchronized", parameters="") TYPE {
    if (swigCPtr != 0) {
      swigBeforeClose();
      if (swigCMemOwn) {
        swigCMemOwn = false;
        $jnicall;
      }
      swigCPtr = 0;
      swigAfterClose();
    }
  }
%typemap(javafinalize) TYPE %{
  @SuppressWarnings("deprecation")
  protected void finalize() {
    close();
  }
%}
%enddef

DPTRAIN_JAVA_HANDLE(dpt_context)
DPTRAIN_JAVA_HANDLE(dpt_model)
DPTRAIN_JAVA_HANDLE(dpt_dataset)
DPTRAIN_JAVA_HANDLE(dpt_trainer)

/* Progress reports handed to Java are owned copies, so a callback may keep them. */
%copyctor dpt_progress;
%typemap(javadirectorin) const dpt_progress & "new $javaclassname(new $javaclassname($jniinput, false))"

/* The director class is the native side of ProgressCallback; Trainer.fit adapts callbacks to it. */
%typemap(javainterfaces) dptrain_binding::ProgressListener "ProgressCallback"
%rename(fitNative) dpt_trainer::fit;
%javamethodmodifiers dpt_trainer::fit "private";

/* Dataset.loadText (below) returns both parts of a text as Datasets; the TextParts that hands them over is
 * package-private. */
%typemap(javaclassmodifiers) dptrain_binding::TextParts "final class"
%rename(loadTextParts) dpt_dataset::loadText;
%javamethodmodifiers dpt_dataset::loadText "private";

/* Sharded data parallel (trainer.h shard, dpt_trainer_replica_memory). SWIG writes no Javadoc, so the new
 * enum and option carry theirs in the class modifiers and the method modifiers (SWIG's documented way). */
%typemap(javaclassmodifiers) enum dpt_shard_mode %{/**
 * What sharded data parallel splits across a trainer's devices ({@link TrainerOptions#setShard}):
 * {@link #SHARD_NONE} (the default) keeps parameters, gradients and optimizer state whole on every device;
 * {@link #SHARD_OPTIMIZER} (ZeRO stage 1) has each device keep the optimizer state of one contiguous range of
 * the parameters only, so that a device's optimizer state takes 1/K of its bytes over K devices, with the
 * same bits as {@code SHARD_NONE}; {@link #SHARD_GRADIENTS} (ZeRO stage 2) also the summed gradient of that
 * range (reduce-scattered bucket by bucket during backward through two staging buckets), with the same bits as
 * {@code SHARD_NONE} at one micro-batch per optimizer step; {@link #SHARD_PARAMETERS} (ZeRO stage 3, FSDP) also
 * the parameters of that range (a pass copies each bucket of them in from the devices that own it into one
 * gather buffer just before the bucket's layers run), with the bits of {@code SHARD_GRADIENTS}.
 * {@code SHARD_OPTIMIZER} also runs on GPUs; {@code SHARD_GRADIENTS} and {@code SHARD_PARAMETERS} run on CPU
 * devices only. Across MPI processes each process shards among its own devices (the counts may differ; a
 * process of one device shards nothing).
 */
public enum%}
%javamethodmodifiers dpt_trainer_options::shard %{/**
   * Sharded data parallel: {@link ShardMode#SHARD_NONE} (the default), {@link ShardMode#SHARD_OPTIMIZER}
   * (ZeRO stage 1: each device keeps, and updates, the optimizer state of one contiguous range of the
   * parameters; the gradient is reduce-scattered and the updated ranges all-gathered),
   * {@link ShardMode#SHARD_GRADIENTS} (ZeRO stage 2: also the gradient; backward writes each gradient bucket,
   * {@link #setBucketBytes} of whole layers, into one of two staging buffers, and each finished bucket is
   * reduce-scattered into the devices' ranges while backward goes on, so that each device keeps the summed
   * gradient of its range only) or {@link ShardMode#SHARD_PARAMETERS} (ZeRO stage 3, PyTorch's FSDP: also the
   * parameters; each device keeps its range of them only, and a pass, training, evaluation or prediction,
   * copies each bucket of them in from the devices that own it into one gather buffer of the largest bucket's
   * size just before the bucket's layers run). {@code SHARD_OPTIMIZER} trains to the same bits as
   * {@code SHARD_NONE} (parameters, step and fit results, checkpoints, which load into any device count and
   * mode), and so do {@code SHARD_GRADIENTS} and {@code SHARD_PARAMETERS} with one micro-batch per optimizer
   * step (with {@code accumulationSteps > 1} each micro-batch's sum is added into the range: one more float32
   * rounding per micro-batch); with {@code SHARD_PARAMETERS}, {@link Trainer#getParameters}, the checksum and
   * checkpoints gather the whole vector. Per device the optimizer state becomes 1/K of its bytes over K devices
   * (AdamW: 8 bytes per parameter become 8/K), with {@code SHARD_GRADIENTS} and {@code SHARD_PARAMETERS} the
   * gradient its range's 4/K bytes per parameter plus the two staging buckets, and with
   * {@code SHARD_PARAMETERS} the parameters their range's 4/K bytes per parameter plus the gather buffer;
   * {@link Trainer#replicaMemory} reports them. {@code SHARD_OPTIMIZER} runs on CPU devices and GPUs; a trainer
   * on CUDA devices refuses {@code SHARD_GRADIENTS} and {@code SHARD_PARAMETERS} with an
   * {@link UnsupportedException} ({@code Status.ERROR_UNSUPPORTED}); tied parameters ({@link Model#tie}) are
   * sharded like the others; across MPI processes each process shards among its own devices; {@code null} is
   * a {@code NullPointerException}.
   */
  public%}

%typemap(javaclassmodifiers) enum dpt_shard_scope %{/**
 * Across MPI processes, which devices share one copy of what {@link ShardMode} splits
 * ({@link TrainerOptions#setShardScope}): {@link #SHARD_SCOPE_PROCESS} (the default; PyTorch FSDP's HYBRID_SHARD)
 * shards among each process's own devices, one whole copy per process; {@link #SHARD_SCOPE_WORLD} (DeepSpeed's
 * ZeRO, FSDP's FULL_SHARD) among every device of every process, with {@link ShardMode#SHARD_OPTIMIZER} (also
 * on GPUs), {@link ShardMode#SHARD_GRADIENTS} and {@link ShardMode#SHARD_PARAMETERS} (CPU devices).
 */
public enum%}
%javamethodmodifiers dpt_trainer_options::shard_scope %{/**
   * Across MPI processes, which devices share one copy of what {@link #setShard} splits:
   * {@link ShardScope#SHARD_SCOPE_PROCESS} (the default: each process shards among its own devices and keeps
   * one whole copy across them) or {@link ShardScope#SHARD_SCOPE_WORLD} (among every device of every process:
   * with P processes of K devices each device keeps 1/(P K); the same bits as {@code SHARD_NONE}). With
   * {@code SHARD_SCOPE_WORLD}, {@link Trainer#saveCheckpoint} is collective: every process calls it and process 0 writes
   * the file; with {@code SHARD_PARAMETERS} (a pass reads the ranges other processes own with one-sided MPI
   * gets) setting the parameters, loading a checkpoint and closing the trainer are collective too (every
   * process, such trainers closed in the same order).
   * Without a communicator both are the same; a
   * {@code null} is a {@code NullPointerException}.
   */
  public%}

/* Pipeline model parallel (trainer.h pipeline_stages, micro_batches, pipeline_schedule, pipeline_cuts),
 * documented the same way. */
%typemap(javaclassmodifiers) enum dpt_pipeline_schedule %{/**
 * The order in which each stage of a pipeline runs its micro-batches ({@link TrainerOptions#setPipelineSchedule}):
 * {@link #PIPELINE_1F1B} (the default; PipeDream-Flush, as Megatron-LM) runs at most S - s - 1 forwards ahead,
 * then one forward and one backward in turn, so that stage s of S keeps at most S - s micro-batches'
 * activations; {@link #PIPELINE_GPIPE} runs every forward, then every backward, and each stage keeps all the
 * micro-batches' activations. The same bubble, (S - 1) / (M + S - 1) of the step, and the same results.
 */
public enum%}
%typemap(javaclassmodifiers) enum dpt_pipeline_scope %{/**
 * Where a pipeline's stages run across MPI processes ({@link TrainerOptions#setPipelineScope}):
 * {@link #PIPELINE_SCOPE_PROCESS} (the default) has every process run every stage on its own devices, on its
 * share of each batch; {@link #PIPELINE_SCOPE_WORLD} divides the S stages among the P processes (S/P each, or P/S copies of each, the
 * activations and gradients between processes sent as MPI messages; every process given the whole batch; the
 * bits of one process running all S stages).
 */
public enum%}
%javamethodmodifiers dpt_trainer_options::pipeline_scope %{/**
   * Across MPI processes, {@link PipelineScope#PIPELINE_SCOPE_PROCESS} (the default: every process runs every
   * stage) or {@link PipelineScope#PIPELINE_SCOPE_WORLD} (the stages divided among the processes). The world
   * scope needs the stage count a multiple of the process count (or of the processes per copy,
   * {@link #setPipelineCopies}), the same device count in every process and no sharding but
   * {@code SHARD_OPTIMIZER} (each stage's optimizer state among its replicas in the process, or with
   * {@code SHARD_SCOPE_WORLD} among every copy's replicas of it; {@link UnsupportedException} otherwise; a tie
   * between two processes' stages goes between them as messages; on GPUs every message goes through host
   * buffers);
   * {@link Trainer#getParameters}, the checksum, {@link Trainer#saveCheckpoint} and saving safetensors are
   * then collective: every process calls them and process 0 writes the files. Without a communicator both are
   * the same; a {@code null} is a {@code NullPointerException}.
   */
  public%}
%typemap(javaclassmodifiers) enum dpt_pipeline_balance %{/**
 * What a pipeline's automatic cuts divide evenly among its stages when {@link TrainerOptions#setPipelineCuts}
 * names none ({@link TrainerOptions#setPipelineBalance}): {@link #PIPELINE_BALANCE_WORK} (the default) each
 * layer's estimated work per sample (its weight matrices' multiply-adds plus one operation per output element;
 * the same cuts on every machine and in every run); {@link #PIPELINE_BALANCE_TIME} each layer's measured time
 * (the first device trains the whole model on one micro-batch of synthetic samples,
 * {@link TrainerOptions#setPipelineBalanceBatch}, when the trainer is created, and each layer counts its best
 * forward plus backward of three; across MPI processes process 0 measures; the cuts may vary from run to run);
 * {@link #PIPELINE_BALANCE_PARAMETERS} each layer's parameters (memory, not time).
 * {@link Trainer#pipelineCuts} gives the cuts chosen.
 */
public enum%}
%javamethodmodifiers dpt_trainer_options::pipeline_balance %{/**
   * What the automatic cuts balance: {@link PipelineBalance#PIPELINE_BALANCE_WORK} (the default),
   * {@link PipelineBalance#PIPELINE_BALANCE_TIME} or {@link PipelineBalance#PIPELINE_BALANCE_PARAMETERS}. Only the
   * default with {@link #setPipelineCuts} named ({@link InvalidArgumentException} when the trainer is created);
   * with the time balance a model that does not fit the first device fails with its out-of-memory error. A
   * {@code null} is a {@code NullPointerException}.
   */
  public%}
%javamethodmodifiers dpt_trainer_options::pipeline_copies %{/**
   * With {@link PipelineScope#PIPELINE_SCOPE_WORLD} across P MPI processes: how many copies C of the pipeline they
   * hold, data parallel among them, each process S C / P stages (the C processes of a block of stages neighbours
   * in rank). 0 (the default): P / S when P > S, else 1. A C that does not divide P, or P / C that does not divide
   * S, is an {@link UnsupportedException} when the trainer is created; nonzero in the process scope an
   * {@link InvalidArgumentException}; no effect without a communicator. Negative values are an
   * {@link InvalidArgumentException} ({@code Status.ERROR_OUT_OF_RANGE}).
   */
  public%}
%javamethodmodifiers dpt_trainer_options::pipeline_balance_batch %{/**
   * With {@link PipelineBalance#PIPELINE_BALANCE_TIME}: the batch size the steps will pass (across MPI processes,
   * the global batch); each measuring pass runs one micro-batch of it on one of a stage's replicas (a layer's
   * time per sample depends on the samples it runs at once). 0 (the default): 16 samples. Negative values are
   * an {@link InvalidArgumentException} ({@code Status.ERROR_OUT_OF_RANGE}).
   */
  public%}
%javamethodmodifiers dpt_trainer::pipelineCuts %{/**
   * Where the pipeline's stages after the first begin: their first layers' names, comma-separated, as
   * {@link TrainerOptions#setPipelineCuts} takes them ({@code ""} without a pipeline), so that a later run can
   * name the cuts a {@link TrainerOptions#setPipelineBalance} chose. Across MPI processes the same on every
   * process.
   */
  public%}
%javamethodmodifiers dpt_trainer_options::pipeline_stages %{/**
   * Pipeline model parallel: the model is cut into this many stages S, and each step's batch into
   * {@link #setMicroBatches} micro-batches that pass forward through the stages and back. The trainer's K
   * devices hold the stages in order, R = K / S data-parallel replicas of each (each micro-batch split among a
   * stage's replicas, their gradients all-reduced). 0 or 1 (the default 0): no pipeline. K must be a multiple
   * of S, CPU devices (a {@link Context} of 3 devices refuses 2 stages, and 2 devices refuse 3,
   * with an {@link UnsupportedException}, {@code Status.ERROR_UNSUPPORTED}), no sharding but
   * {@code SHARD_OPTIMIZER} in the process scope (each stage's optimizer state cut among the process's
   * replicas of it; else {@code UnsupportedException}), the even split ({@link InvalidArgumentException}) and a parameter tied
   * across stages only as its stage's last parameter (a language model's head);
   * the model needs at least stages - 1 places to cut (between layers, where one tensor is live). A step gives
   * the very bits of R devices with {@link #setAccumulationSteps} M stepped on the same micro-batches (the
   * batch's even split: the first n % M micro-batches get one more sample); with a clip norm the gradient norm
   * may differ in its last bits (docs/pipeline.md).
   * Negative values are an {@link InvalidArgumentException} ({@code Status.ERROR_OUT_OF_RANGE}).
   */
  public%}
%javamethodmodifiers dpt_trainer_options::micro_batches %{/**
   * Micro-batches per pipelined step ({@link #setPipelineStages}), 1 to 1024 (a batch of fewer samples has one
   * per sample); 0 (the default): four per stage. More than 1024 is an {@link InvalidArgumentException}
   * ({@code Status.ERROR_OUT_OF_RANGE}) when the trainer is created, and so is a negative value here.
   */
  public%}
%javamethodmodifiers dpt_trainer_options::pipeline_schedule %{/**
   * The pipeline's schedule: {@link PipelineSchedule#PIPELINE_1F1B} (the default) or
   * {@link PipelineSchedule#PIPELINE_GPIPE}; the same results either way. {@code null} is a
   * {@code NullPointerException}.
   */
  public%}
%javamethodmodifiers dpt_trainer_options::pipeline_cuts %{/**
   * Where the pipeline's stages after the first begin: stages - 1 node names, comma-separated, in node order
   * ({@code "layer2.0.conv1,layer3.0.conv1,layer4.0.conv1"}; a node without a name is its index). A stage may
   * begin only at a node where one tensor is live (between blocks, not inside a residual block). {@code null}
   * or {@code ""} (the default {@code null}): the cuts that divide {@link #setPipelineBalance}'s costs most
   * evenly ({@link Trainer#pipelineCuts} gives them). An unknown name,
   * a node inside a block, names out of order or a count other than stages - 1 is an
   * {@link InvalidArgumentException} ({@code Status.ERROR_INVALID_ARGUMENT}) when the trainer is created. The
   * options keep their own copy of the text.
   */
  public%}

/* Trainer.replicaMemory (below) copies the native struct into the immutable ReplicaMemory; the struct's proxy
 * (ReplicaMemoryNative, dptrain.i) is package-private. */
%typemap(javaclassmodifiers) dpt_replica_memory "final class"
%rename(replicaMemoryNative) dpt_trainer::replicaMemory;
%javamethodmodifiers dpt_trainer::replicaMemory "private";

/* Per-device times and the timeline (trainer.h dpt_trainer_replica_times, dpt_trainer_trace_start/_write,
 * docs/profiling.md). Trainer.replicaTimes (below) copies the native struct into the immutable ReplicaTimes,
 * whose proxy (ReplicaTimesNative, dptrain.i) is package-private; Trainer.traceStart and traceWrite (below) call
 * the private generated methods, for their Javadoc and their parameter names. */
%typemap(javaclassmodifiers) dpt_replica_times "final class"
%rename(replicaTimesNative) dpt_trainer::replicaTimes;
%javamethodmodifiers dpt_trainer::replicaTimes "private";
%rename(replicaTotalsNative) dpt_trainer::replicaTotals;
%javamethodmodifiers dpt_trainer::replicaTotals "private";
%rename(traceStartNative) dpt_trainer::traceStart;
%javamethodmodifiers dpt_trainer::traceStart "private";
%rename(traceWriteNative) dpt_trainer::traceWrite;
%javamethodmodifiers dpt_trainer::traceWrite "private";

/* The generated recomputeBatchNorm stays public; its Javadoc comes with its modifiers. */
%javamethodmodifiers dpt_trainer::recomputeBatchNorm %{/**
   * Recomputes the running statistics of the model's batch norms from data (PyTorch's
   * {@code torch.optim.swa_utils.update_bn}): forward in training mode over the first {@code sample_count}
   * samples of {@code dataset} (0, or more than it holds: all), in order, in batches of {@code batch_size}
   * (0 = 256); each running mean and variance becomes the plain average of the batches' means and unbiased
   * variances. Parameters, optimizer state and counters do not change; a model without batch norm is left
   * as it is. Call it after training, before evaluating. A pipeline trainer, which normalises each micro-batch
   * on its own, averages the statistics of the micro-batches a step would cut the batches into. A null
   * dataset is an {@link InvalidArgumentException} ({@code Status.ERROR_NULL_POINTER}), a negative size one
   * with {@code ERROR_OUT_OF_RANGE}, samples that do not fit the model one with {@code ERROR_SIZE_MISMATCH}.
   */
  public%}

%typemap(javaimports) dpt_dataset, dpt_trainer %{
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
%}

%typemap(javacode) dpt_context %{
  /*
   * A context keeps no references to its trainers: closing it does not close them (the C API lets a trainer
   * outlive its context: it shares the context's devices), and a trainer dropped without close() stays
   * collectable, so its finalizer can free it.
   */
  private void swigBeforeClose() {}
  private void swigAfterClose() {}

  /** The devices of this context, in index order. */
  public java.util.List<DeviceInfo> devices() {
    int n = Math.toIntExact(deviceCount());
    java.util.List<DeviceInfo> list = new java.util.ArrayList<>(n);
    for (int i = 0; i < n; ++i) list.add(deviceInfo(i));
    return java.util.Collections.unmodifiableList(list);
  }
%}

/* Model: the graph builders keep their generated signatures (tensor ids are longs, name null = the node's
 * index) and get overloads with PyTorch's defaults below; the text forms of shapes and the per-index named
 * tensor queries are private, behind tensorShape(long) -> int[] and namedTensors(kind) -> List<NamedTensor>;
 * concat2 / concat3 are both Java's concat. */
%rename(concat) dpt_model::concat2;
%rename(concat) dpt_model::concat3;
/* dptrain.i's tieParameter (a method named tie would collide with the C function dpt_model_tie). */
%rename(tie) dpt_model::tieParameter;
%rename(tensorShapeText) dpt_model::tensorShape;
%javamethodmodifiers dpt_model::tensorShape "private";
%javamethodmodifiers dpt_model::namedTensorName "private";
%javamethodmodifiers dpt_model::namedTensorOffset "private";
%javamethodmodifiers dpt_model::namedTensorShape "private";

%typemap(javacode) dpt_model %{
  private void swigBeforeClose() {}
  private void swigAfterClose() {}

  /** The id of the input tensor, which every model has. */
  public static final long INPUT = 0;

  /** The dimensions of one sample of a tensor, e.g. {64, 28, 28}. */
  public int[] tensorShape(long tensor) {
    return NamedTensor.parseShape(tensorShapeText(tensor));
  }

  /** The named tensors of one kind, in the order of the flat vector (their offsets and sizes cover it). */
  public java.util.List<NamedTensor> namedTensors(TensorKind kind) {
    int n = Math.toIntExact(namedTensorCount(kind));
    java.util.List<NamedTensor> list = new java.util.ArrayList<>(n);
    for (int i = 0; i < n; ++i) {
      list.add(new NamedTensor(namedTensorName(kind, i), kind, namedTensorOffset(kind, i),
                               NamedTensor.parseShape(namedTensorShape(kind, i))));
    }
    return java.util.Collections.unmodifiableList(list);
  }

  /** The trainable parameters ("conv1.weight"), covering the parameterCount() floats of getParameters. */
  public java.util.List<NamedTensor> parameters() {
    return namedTensors(TensorKind.TENSOR_PARAMETER);
  }

  /** The buffers, i.e. running statistics ("bn1.running_mean"), covering the bufferCount() floats of getBuffers. */
  public java.util.List<NamedTensor> buffers() {
    return namedTensors(TensorKind.TENSOR_BUFFER);
  }

  /** A convolution with a bias, named by its index. */
  public long conv2d(long input, long outChannels, long kernel, long stride, long padding) {
    return conv2d(input, outChannels, kernel, stride, padding, true, null);
  }

  /** A convolution named by its index ({@code bias} false before a batch norm). */
  public long conv2d(long input, long outChannels, long kernel, long stride, long padding, boolean bias) {
    return conv2d(input, outChannels, kernel, stride, padding, bias, null);
  }

  /** A fully connected layer with a bias, named by its index. */
  public long dense(long input, long units) {
    return dense(input, units, true, null);
  }

  /** A fully connected layer with a bias. */
  public long dense(long input, long units, String name) {
    return dense(input, units, true, name);
  }

  /** A batch norm with PyTorch's defaults (eps 1e-5, momentum 0.1), named by its index. */
  public long batchNorm(long input) {
    return batchNorm(input, 1e-5f, 0.1f, null);
  }

  /** A batch norm with PyTorch's defaults (eps 1e-5, momentum 0.1). */
  public long batchNorm(long input, String name) {
    return batchNorm(input, 1e-5f, 0.1f, name);
  }

  /** A layer norm with eps 1e-5, named by its index. */
  public long layerNorm(long input) {
    return layerNorm(input, 1e-5f, null);
  }

  /** A layer norm with eps 1e-5. */
  public long layerNorm(long input, String name) {
    return layerNorm(input, 1e-5f, name);
  }

  /** A fully connected layer over the last dimension with a bias, named by its index. */
  public long linear(long input, long units) {
    return linear(input, units, true, null);
  }

  /** A fully connected layer over the last dimension with a bias. */
  public long linear(long input, long units, String name) {
    return linear(input, units, true, name);
  }

  /** A token embedding of the token input, named by its index. */
  public long tokenEmbedding(long input, long vocabulary, long features) {
    return tokenEmbedding(input, vocabulary, features, null);
  }

  /** A learned position embedding, named by its index. */
  public long positionEmbedding(long input) {
    return positionEmbedding(input, null);
  }

  /** Causal self-attention without attention dropout, named by its index. */
  public long causalSelfAttention(long input, long heads) {
    return causalSelfAttention(input, heads, 0.0f, null);
  }

  /** Causal self-attention without attention dropout. */
  public long causalSelfAttention(long input, long heads, String name) {
    return causalSelfAttention(input, heads, 0.0f, name);
  }

  /** An activation named by its index. */
  public long activation(long input, Activation activation) {
    return activation(input, activation, null);
  }

  /** A ReLU named by its index. */
  public long relu(long input) {
    return activation(input, Activation.ACTIVATION_RELU, null);
  }

  /** A pooling layer named by its index. */
  public long pool(long input, PoolKind kind, long window, long stride) {
    return pool(input, kind, window, stride, null);
  }

  /** Global average pooling named by its index. */
  public long globalAvgPool(long input) {
    return globalAvgPool(input, null);
  }

  /** A flatten named by its index. */
  public long flatten(long input) {
    return flatten(input, null);
  }

  /** A dropout named by its index. */
  public long dropout(long input, float rate) {
    return dropout(input, rate, null);
  }

  /** The sum of two tensors of one shape, named by its index. */
  public long add(long a, long b) {
    return add(a, b, null);
  }

  /** Two tensors concatenated along the channels, named by its index. */
  public long concat(long a, long b) {
    return concat(a, b, (String) null);
  }

  /** Three tensors concatenated along the channels, named by its index. */
  public long concat(long a, long b, long c) {
    return concat(a, b, c, null);
  }
%}

%typemap(javacode) dpt_dataset %{
  /** Trainer.fit calls in progress that read this dataset (a progress callback must not close it). */
  private int swigFits;

  synchronized void swigFitBegin() {
    ++swigFits;
  }

  synchronized void swigFitEnd() {
    --swigFits;
  }

  private void swigBeforeClose() {
    if (swigFits > 0) {
      throw DptrainException.of(Status.ERROR_INVALID_STATE,
          "Dataset.close: this Dataset is used by a running Trainer.fit; return true from the progress callback to "
              + "stop training, then close it");
    }
  }

  private void swigAfterClose() {}

  /** Same as {@link #Dataset(float[], int[], long, long, long, long)}, from direct buffers (remaining elements). */
  public Dataset(FloatBuffer inputs, IntBuffer labels, long channels, long height, long width, long classes) {
    this(DptrainJNI.new_Dataset(Buffers.arg(inputs, "inputs"), Buffers.arg(labels, "labels"), channels, height,
                                width, classes), true);
  }

  /** Copies samples [start, start + count) into direct buffers (their remaining elements). */
  public void copyBatch(long start, long count, FloatBuffer outInputs, IntBuffer outLabels) {
    DptrainJNI.Dataset_copyBatch(swigCPtr, this, start, count, Buffers.arg(outInputs, "outInputs"),
                                 Buffers.arg(outLabels, "outLabels"));
  }

  /**
   * {@link #createTokens(int[], int[], long, long, long)} from direct buffers (their remaining elements).
   */
  public static Dataset createTokens(IntBuffer tokens, IntBuffer targets, long sampleCount, long sequenceLength,
                                     long vocabulary) {
    return new Dataset(DptrainJNI.Dataset_createTokens(Buffers.arg(tokens, "tokens"), Buffers.arg(targets, "targets"),
                                                       sampleCount, sequenceLength, vocabulary), true);
  }

  /** Copies samples [start, start + count) of a token dataset into direct buffers (their remaining elements). */
  public void copyTokens(long start, long count, IntBuffer outTokens, IntBuffer outTargets) {
    DptrainJNI.Dataset_copyTokens(swigCPtr, this, start, count, Buffers.arg(outTokens, "outTokens"),
                                  Buffers.arg(outTargets, "outTargets"));
  }

  /**
   * Loads byte-level text (vocabulary {@link Dptrain#TEXT_VOCABULARY}, one token per byte) cut into windows of
   * {@code contextLength + 1} bytes: a sample's tokens are the first {@code contextLength}, its targets the
   * next byte at every position. The last {@code validationFraction} (in (0, 1)) of the bytes make the
   * validation part, the rest the training part.
   *
   * @param path a UTF-8 text file, or a directory whose text files are read in name order
   * @return {training part, validation part}, two token datasets the caller closes
   */
  public static Dataset[] loadText(String path, long contextLength, double validationFraction) {
    TextParts parts = loadTextParts(path, contextLength, validationFraction);
    try {
      Dataset train = parts.takeTrain();
      return new Dataset[] {train, parts.takeValidation()};
    } finally {
      parts.delete();
    }
  }
%}

%typemap(javaconstruct) dpt_trainer {
    this($imcall, true);
    this.swigOutputs = model.outputSize();
    this.swigBuffers = model.bufferCount();
  }

%typemap(javacode) dpt_trainer %{
  /** Outputs (classes) per sample of the model. */
  private long swigOutputs;

  /** Floats of buffers (running statistics) of the model. */
  private long swigBuffers;

  /** True while fit runs (its progress callback must not close this trainer or its data). */
  private boolean swigInFit;

  private synchronized void swigCheckNotInFit(String what) {
    if (swigInFit) {
      throw DptrainException.of(Status.ERROR_INVALID_STATE,
          what + ": a Trainer is in fit; return true from the progress callback to stop training, then close it");
    }
  }

  private synchronized void swigSetInFit(boolean inFit) {
    swigInFit = inFit;
  }

  private void swigBeforeClose() {
    swigCheckNotInFit("Trainer.close");
  }

  private void swigAfterClose() {}

  /** A trainer on every device of the context with default trainer and optimizer options. */
  public Trainer(Context context, Model model) {
    this(context, model, null, null);
  }

  /** A trainer on the listed devices of the context (even split). */
  public Trainer(Context context, Model model, TrainerOptions options, OptimizerOptions optimizer, long[] devices) {
    this(context, model, options, optimizer, devices, new float[0]);
  }

  /** {@link #step(float[], int[])} on direct buffers (their remaining elements); no copy. */
  public StepResult step(FloatBuffer inputs, IntBuffer labels) {
    return new StepResult(DptrainJNI.Trainer_step(swigCPtr, this, Buffers.arg(inputs, "inputs"),
                                                  Buffers.arg(labels, "labels")), true);
  }

  /** {@link #evaluate(float[], int[])} on direct buffers (their remaining elements); no copy. */
  public EvalResult evaluate(FloatBuffer inputs, IntBuffer labels) {
    return new EvalResult(DptrainJNI.Trainer_evaluate(swigCPtr, this, Buffers.arg(inputs, "inputs"),
                                                      Buffers.arg(labels, "labels")), true);
  }

  /** {@link #predict(float[], long, float[])} on direct buffers (their remaining elements); no copy. */
  public void predict(FloatBuffer inputs, long sampleCount, FloatBuffer outLogits) {
    DptrainJNI.Trainer_predict(swigCPtr, this, Buffers.arg(inputs, "inputs"), sampleCount,
                               Buffers.arg(outLogits, "outLogits"));
  }

  /** The logits of {@code sampleCount} samples, in a new array. */
  public float[] predict(float[] inputs, long sampleCount) {
    float[] logits = Buffers.newArray(Math.multiplyExact(sampleCount, swigOutputs), "sampleCount");
    predict(inputs, sampleCount, logits);
    return logits;
  }

  /** {@link #stepTokens(int[], int[], long)} on direct buffers (their remaining elements); no copy. */
  public StepResult stepTokens(IntBuffer tokens, IntBuffer targets, long batchSize) {
    return new StepResult(DptrainJNI.Trainer_stepTokens(swigCPtr, this, Buffers.arg(tokens, "tokens"),
                                                        Buffers.arg(targets, "targets"), batchSize), true);
  }

  /** {@link #evaluateTokens(int[], int[], long)} on direct buffers (their remaining elements); no copy. */
  public EvalResult evaluateTokens(IntBuffer tokens, IntBuffer targets, long sampleCount) {
    return new EvalResult(DptrainJNI.Trainer_evaluateTokens(swigCPtr, this, Buffers.arg(tokens, "tokens"),
                                                            Buffers.arg(targets, "targets"), sampleCount), true);
  }

  /** {@link #predictTokens(int[], long, float[])} on direct buffers (their remaining elements); no copy. */
  public void predictTokens(IntBuffer tokens, long sampleCount, FloatBuffer outLogits) {
    DptrainJNI.Trainer_predictTokens(swigCPtr, this, Buffers.arg(tokens, "tokens"), sampleCount,
                                     Buffers.arg(outLogits, "outLogits"));
  }

  /** The logits of {@code sampleCount} token sequences (every position's), in a new array. */
  public float[] predictTokens(int[] tokens, long sampleCount) {
    float[] logits = Buffers.newArray(Math.multiplyExact(sampleCount, swigOutputs), "sampleCount");
    predictTokens(tokens, sampleCount, logits);
    return logits;
  }

  /** Copies the parameters (of the first replica) into a direct buffer (its remaining elements). */
  public void getParameters(FloatBuffer outParams) {
    DptrainJNI.Trainer_getParameters(swigCPtr, this, Buffers.arg(outParams, "outParams"));
  }

  /** The parameters (of the first replica), in a new array. */
  public float[] getParameters() {
    float[] params = Buffers.newArray(parameterCount(), "parameterCount");
    getParameters(params);
    return params;
  }

  /** The parameters of one replica, in a new array. */
  public float[] getReplicaParameters(long replica) {
    float[] params = Buffers.newArray(parameterCount(), "parameterCount");
    getReplicaParameters(replica, params);
    return params;
  }

  /**
   * The bytes replica {@code device} holds now in its device's memory, by what they are for: parameters (with
   * {@link ShardMode#SHARD_PARAMETERS}: the device's own range of them plus its gather buffer), gradient (with
   * {@link ShardMode#SHARD_GRADIENTS} or {@code SHARD_PARAMETERS}: the summed gradient of the device's own range
   * plus the two staging buckets), optimizer state (of the device's own range in any sharded mode,
   * {@link ShardMode#SHARD_OPTIMIZER}, {@code SHARD_GRADIENTS} or {@code SHARD_PARAMETERS}: over K devices the
   * ranges' states add up to one unsharded replica's), running statistics, and everything the passes allocate
   * (activations, which grow with the largest slice seen so far).
   *
   * @param device 0 .. {@code deviceCount() - 1}
   * @throws InvalidArgumentException with {@code Status.ERROR_OUT_OF_RANGE} for a negative device or one past
   *     the last
   */
  public ReplicaMemory replicaMemory(long device) {
    if (device < 0) {
      throw DptrainException.of(Status.ERROR_OUT_OF_RANGE,
          "Trainer.replicaMemory: device must not be negative (got " + device + ")");
    }
    ReplicaMemoryNative m = replicaMemoryNative(device);
    try {
      return new ReplicaMemory(m.getParameters(), m.getGradients(), m.getOptimizerState(), m.getBuffers(),
                               m.getActivations(), m.getTotal());
    } finally {
      m.delete();
    }
  }

  /**
   * Replica {@code device}'s share of the last {@link #step} call (of a micro-batch with accumulation: the update
   * and, without gradient buckets, the reduction come with the last of a window): its compute (forward and
   * backward), communication (its gradient reduction), update and idle seconds, and its reduction's bus
   * bandwidth. {@code computeSeconds() + updateSeconds() + idleSeconds()}, plus {@code communicationSeconds()}
   * when the reduction ran on the device's own thread (no gradient buckets), is the call's
   * {@link StepResult#getTotalSeconds}. All 0 before the first step.
   *
   * @param device 0 .. {@code deviceCount() - 1}
   * @throws InvalidArgumentException with {@code Status.ERROR_OUT_OF_RANGE} for a negative device or one past
   *     the last
   */
  public ReplicaTimes replicaTimes(long device) {
    if (device < 0) {
      throw DptrainException.of(Status.ERROR_OUT_OF_RANGE,
          "Trainer.replicaTimes: device must not be negative (got " + device + ")");
    }
    return copyTimes(replicaTimesNative(device));
  }

  /**
   * Replica {@code device}'s times summed over every {@link #step} call since this trainer was made (the
   * steps of {@link #fit(Dataset, Dataset, FitOptions)} included; evaluation and prediction are not steps):
   * the seconds of compute, communication, update and idle, and the bus bandwidth of all its reductions
   * (their bytes over their seconds). All 0 before the first step. A fit's share: the seconds after it minus
   * those before.
   *
   * @param device 0 .. {@code deviceCount() - 1}
   * @throws InvalidArgumentException with {@code Status.ERROR_OUT_OF_RANGE} for a negative device or one past
   *     the last
   */
  public ReplicaTimes replicaTotals(long device) {
    if (device < 0) {
      throw DptrainException.of(Status.ERROR_OUT_OF_RANGE,
          "Trainer.replicaTotals: device must not be negative (got " + device + ")");
    }
    return copyTimes(replicaTotalsNative(device));
  }

  private static ReplicaTimes copyTimes(ReplicaTimesNative t) {
    try {
      return new ReplicaTimes(t.getComputeSeconds(), t.getCommunicationSeconds(), t.getUpdateSeconds(),
                              t.getIdleSeconds(), t.getBusBandwidth());
    } finally {
      t.delete();
    }
  }

  /**
   * Starts recording a timeline of this trainer's work, from the next call on: per device, each op's forward
   * and backward, the gradient reductions (on the device's thread, or with gradient buckets on its
   * communication thread), the parameter gathers of {@link ShardMode#SHARD_PARAMETERS} and the update. Up to
   * {@code maxEvents} are kept per device and thread; later ones are dropped and counted. Calling it again
   * restarts the recording; {@link #traceWrite} stops it and writes the file. On GPUs each recorded op waits
   * for the one before it on the device, so its times are its device time (a recorded step is slower).
   * Recording changes no bit of training.
   *
   * @param maxEvents 1 .. 2^24 events per device and thread (room for them is reserved now)
   * @throws InvalidArgumentException with {@code Status.ERROR_INVALID_ARGUMENT} for 0, with
   *     {@code Status.ERROR_OUT_OF_RANGE} for a negative count or one above 2^24
   * @throws DeviceException with {@code Status.ERROR_OUT_OF_MEMORY} when the room cannot be reserved
   */
  public void traceStart(long maxEvents) {
    if (maxEvents < 0) {
      throw DptrainException.of(Status.ERROR_OUT_OF_RANGE,
          "Trainer.traceStart: maxEvents must not be negative (got " + maxEvents + ")");
    }
    traceStartNative(maxEvents);
  }

  /**
   * Stops the recording that {@link #traceStart} started and writes the timeline to {@code path} as Chrome
   * trace-event JSON, atomically: two rows per device ({@code "cpu:0 compute"}, {@code "cpu:0 communication"}),
   * one {@code "X"} event per recorded piece of work (categories {@code forward}, {@code backward},
   * {@code communication}, {@code gather}, {@code update}), idle time as gaps. Open it in
   * {@code chrome://tracing} or https://ui.perfetto.dev (docs/profiling.md).
   *
   * @param path the file to write (replaced if it exists)
   * @throws InvalidArgumentException with {@code Status.ERROR_INVALID_STATE} when no recording runs, with
   *     {@code Status.ERROR_NULL_POINTER} for a null path, {@code Status.ERROR_INVALID_ARGUMENT} for an empty one
   * @throws IOFormatException with {@code Status.ERROR_IO} when the file cannot be written (the recording then
   *     stays stopped)
   */
  public void traceWrite(String path) {
    traceWriteNative(path);
  }

  /** Sets the parameters of every replica from a direct buffer (its remaining elements). */
  public void setParameters(FloatBuffer params) {
    DptrainJNI.Trainer_setParameters(swigCPtr, this, Buffers.arg(params, "params"));
  }

  /** Floats of buffers (running statistics) per replica: the model's bufferCount(); 0 without batch norm. */
  public long bufferCount() {
    return swigBuffers;
  }

  /** The buffers (running statistics, in the order of Model.buffers()), in a new array. */
  public float[] getBuffers() {
    float[] buffers = Buffers.newArray(swigBuffers, "bufferCount");
    getBuffers(buffers);
    return buffers;
  }

  /** Copies the buffers into a direct buffer (its remaining elements). */
  public void getBuffers(FloatBuffer outBuffers) {
    DptrainJNI.Trainer_getBuffers(swigCPtr, this, Buffers.arg(outBuffers, "outBuffers"));
  }

  /** Sets the buffers of every replica from a direct buffer (its remaining elements). */
  public void setBuffers(FloatBuffer buffers) {
    DptrainJNI.Trainer_setBuffers(swigCPtr, this, Buffers.arg(buffers, "buffers"));
  }

  private static String swigPath(java.nio.file.Path path, String what) {
    if (path == null) throw DptrainException.of(Status.ERROR_NULL_POINTER, what + ": path must not be null");
    return path.toString();
  }

  /** Writes the named parameters and buffers as a safetensors file (PyTorch's safetensors.torch.load_file). */
  public void saveSafetensors(java.nio.file.Path path) {
    saveSafetensors(swigPath(path, "Trainer.saveSafetensors"));
  }

  /** Sets the parameters and buffers of every replica, by name, from a safetensors file. */
  public void loadSafetensors(java.nio.file.Path path) {
    loadSafetensors(swigPath(path, "Trainer.loadSafetensors"));
  }

  /** Writes a checkpoint (dptrain/checkpoint.h: parameters, optimizer state, counters, seed). */
  public void saveCheckpoint(java.nio.file.Path path) {
    saveCheckpoint(swigPath(path, "Trainer.saveCheckpoint"));
  }

  /** Restores a checkpoint written by saveCheckpoint. */
  public void loadCheckpoint(java.nio.file.Path path) {
    loadCheckpoint(swigPath(path, "Trainer.loadCheckpoint"));
  }

  /**
   * Trains for options.getEpochs() epochs over {@code train}, evaluating {@code test} (may be null) after
   * each epoch. {@code callback} (may be null) receives progress reports on the thread that called fit and
   * returns true to stop training. An exception thrown by the callback stops training and is rethrown here.
   */
  public FitResult fit(Dataset train, Dataset test, FitOptions options, ProgressCallback callback) {
    if (callback == null) return fitNative(train, test, options, null);
    ProgressAdapter adapter = new ProgressAdapter(callback);
    swigSetInFit(true);
    if (train != null) train.swigFitBegin();
    if (test != null) test.swigFitBegin();
    try {
      FitResult result;
      try {
        result = fitNative(train, test, options, adapter);
      } catch (RuntimeException | Error e) {
        adapter.rethrowFailure(e);
        throw e;
      }
      adapter.rethrowFailure(null);
      return result;
    } finally {
      if (test != null) test.swigFitEnd();
      if (train != null) train.swigFitEnd();
      swigSetInFit(false);
      adapter.delete();
      java.lang.ref.Reference.reachabilityFence(callback);
    }
  }

  /** {@link #fit(Dataset, Dataset, FitOptions, ProgressCallback)} without a callback. */
  public FitResult fit(Dataset train, Dataset test, FitOptions options) {
    return fit(train, test, options, null);
  }

  /** One epoch with the default fit options, no callback. */
  public FitResult fit(Dataset train, Dataset test) {
    return fit(train, test, null, null);
  }
%}
