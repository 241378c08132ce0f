package dptrain

import (
	"errors"
	"testing"

	"dptrain.org/dptrain/internal/swig"
)

// The Go constants are written out (the C values are pinned forever); check them against the headers
// as SWIG read them.
func TestConstantsMatchTheCHeaders(t *testing.T) {
	pairs := []struct {
		name   string
		goV, c int
	}{
		{"StatusOK", int(StatusOK), int(swig.DPT_OK)},
		{"StatusInvalidArgument", int(StatusInvalidArgument), int(swig.DPT_ERROR_INVALID_ARGUMENT)},
		{"StatusNullPointer", int(StatusNullPointer), int(swig.DPT_ERROR_NULL_POINTER)},
		{"StatusOutOfRange", int(StatusOutOfRange), int(swig.DPT_ERROR_OUT_OF_RANGE)},
		{"StatusSizeMismatch", int(StatusSizeMismatch), int(swig.DPT_ERROR_SIZE_MISMATCH)},
		{"StatusInvalidState", int(StatusInvalidState), int(swig.DPT_ERROR_INVALID_STATE)},
		{"StatusBufferTooSmall", int(StatusBufferTooSmall), int(swig.DPT_ERROR_BUFFER_TOO_SMALL)},
		{"StatusNonFinite", int(StatusNonFinite), int(swig.DPT_ERROR_NON_FINITE)},
		{"StatusBusy", int(StatusBusy), int(swig.DPT_ERROR_BUSY)},
		{"StatusUnsupported", int(StatusUnsupported), int(swig.DPT_ERROR_UNSUPPORTED)},
		{"StatusDevice", int(StatusDevice), int(swig.DPT_ERROR_DEVICE)},
		{"StatusOutOfMemory", int(StatusOutOfMemory), int(swig.DPT_ERROR_OUT_OF_MEMORY)},
		{"StatusDeviceNotFound", int(StatusDeviceNotFound), int(swig.DPT_ERROR_DEVICE_NOT_FOUND)},
		{"StatusCommunication", int(StatusCommunication), int(swig.DPT_ERROR_COMMUNICATION)},
		{"StatusTimeout", int(StatusTimeout), int(swig.DPT_ERROR_TIMEOUT)},
		{"StatusIO", int(StatusIO), int(swig.DPT_ERROR_IO)},
		{"StatusFormat", int(StatusFormat), int(swig.DPT_ERROR_FORMAT)},
		{"StatusInternal", int(StatusInternal), int(swig.DPT_ERROR_INTERNAL)},
		{"DeviceCPU", int(DeviceCPU), int(swig.DPT_DEVICE_CPU)},
		{"DeviceCUDA", int(DeviceCUDA), int(swig.DPT_DEVICE_CUDA)},
		{"DevicesCPU", int(DevicesCPU), int(swig.DPT_DEVICES_CPU)},
		{"DevicesCUDA", int(DevicesCUDA), int(swig.DPT_DEVICES_CUDA)},
		{"DevicesAll", int(DevicesAll), int(swig.DPT_DEVICES_ALL)},
		{"ReLU", int(ReLU), int(swig.DPT_ACTIVATION_RELU)},
		{"Sigmoid", int(Sigmoid), int(swig.DPT_ACTIVATION_SIGMOID)},
		{"Tanh", int(Tanh), int(swig.DPT_ACTIVATION_TANH)},
		{"GELU", int(GELU), int(swig.DPT_ACTIVATION_GELU)},
		{"GELUTanh", int(GELUTanh), int(swig.DPT_ACTIVATION_GELU_TANH)},
		{"TensorParameter", int(TensorParameter), int(swig.DPT_TENSOR_PARAMETER)},
		{"TensorBuffer", int(TensorBuffer), int(swig.DPT_TENSOR_BUFFER)},
		{"BatchNormSync", int(BatchNormSync), int(swig.DPT_BATCH_NORM_SYNC)},
		{"BatchNormLocal", int(BatchNormLocal), int(swig.DPT_BATCH_NORM_LOCAL)},
		{"PrecisionFP32", int(PrecisionFP32), int(swig.DPT_PRECISION_FP32)},
		{"PrecisionBF16", int(PrecisionBF16), int(swig.DPT_PRECISION_BF16)},
		{"PrecisionFP16", int(PrecisionFP16), int(swig.DPT_PRECISION_FP16)},
		{"ShardNone", int(ShardNone), int(swig.DPT_SHARD_NONE)},
		{"ShardOptimizer", int(ShardOptimizer), int(swig.DPT_SHARD_OPTIMIZER)},
		{"ShardGradients", int(ShardGradients), int(swig.DPT_SHARD_GRADIENTS)},
		{"ShardParameters", int(ShardParameters), int(swig.DPT_SHARD_PARAMETERS)},
		{"ShardScopeProcess", int(ShardScopeProcess), int(swig.DPT_SHARD_SCOPE_PROCESS)},
		{"ShardScopeWorld", int(ShardScopeWorld), int(swig.DPT_SHARD_SCOPE_WORLD)},
		{"Pipeline1F1B", int(Pipeline1F1B), int(swig.DPT_PIPELINE_1F1B)},
		{"PipelineGPipe", int(PipelineGPipe), int(swig.DPT_PIPELINE_GPIPE)},
		{"PipelineScopeProcess", int(PipelineScopeProcess), int(swig.DPT_PIPELINE_SCOPE_PROCESS)},
		{"PipelineScopeWorld", int(PipelineScopeWorld), int(swig.DPT_PIPELINE_SCOPE_WORLD)},
		{"PipelineBalanceWork", int(PipelineBalanceWork), int(swig.DPT_PIPELINE_BALANCE_WORK)},
		{"PipelineBalanceTime", int(PipelineBalanceTime), int(swig.DPT_PIPELINE_BALANCE_TIME)},
		{"PipelineBalanceParameters", int(PipelineBalanceParameters), int(swig.DPT_PIPELINE_BALANCE_PARAMETERS)},
		{"PoolAvg", int(PoolAvg), int(swig.DPT_POOL_AVG)},
		{"PoolMax", int(PoolMax), int(swig.DPT_POOL_MAX)},
		{"DatasetTrain", int(DatasetTrain), int(swig.DPT_DATASET_TRAIN)},
		{"DatasetTest", int(DatasetTest), int(swig.DPT_DATASET_TEST)},
		{"SplitEven", int(SplitEven), int(swig.DPT_SPLIT_EVEN)},
		{"SplitWeighted", int(SplitWeighted), int(swig.DPT_SPLIT_WEIGHTED)},
		{"SplitAuto", int(SplitAuto), int(swig.DPT_SPLIT_AUTO)},
		{"AllReduceRing", int(AllReduceRing), int(swig.DPT_ALLREDUCE_RING)},
		{"AllReduceNaive", int(AllReduceNaive), int(swig.DPT_ALLREDUCE_NAIVE)},
		{"InitUniformFanIn", int(InitUniformFanIn), int(swig.DPT_INIT_UNIFORM_FAN_IN)},
		{"InitNormal", int(InitNormal), int(swig.DPT_INIT_NORMAL)},
		{"NonFiniteSkip", int(NonFiniteSkip), int(swig.DPT_NONFINITE_SKIP)},
		{"NonFiniteError", int(NonFiniteError), int(swig.DPT_NONFINITE_ERROR)},
		{"CommunicatorLocal", int(CommunicatorLocal), int(swig.DPT_COMMUNICATOR_LOCAL)},
		{"CommunicatorMPI", int(CommunicatorMPI), int(swig.DPT_COMMUNICATOR_MPI)},
		{"SGD", int(SGD), int(swig.DPT_OPTIMIZER_SGD)},
		{"AdamW", int(AdamW), int(swig.DPT_OPTIMIZER_ADAMW)},
		{"ScheduleConstant", int(ScheduleConstant), int(swig.DPT_SCHEDULE_CONSTANT)},
		{"ScheduleStep", int(ScheduleStep), int(swig.DPT_SCHEDULE_STEP)},
		{"ScheduleCosine", int(ScheduleCosine), int(swig.DPT_SCHEDULE_COSINE)},
		{"ProgressBatch", int(ProgressBatch), int(swig.DPT_PROGRESS_BATCH)},
		{"ProgressEpoch", int(ProgressEpoch), int(swig.DPT_PROGRESS_EPOCH)},
		{"InputFloat32", int(InputFloat32), int(swig.DPT_INPUT_FLOAT32)},
		{"InputTokens", int(InputTokens), int(swig.DPT_INPUT_TOKENS)},
		{"WeightDecayAll", int(WeightDecayAll), int(swig.DPT_WEIGHT_DECAY_ALL)},
		{"WeightDecayMatrices", int(WeightDecayMatrices), int(swig.DPT_WEIGHT_DECAY_MATRICES)},
		{"IgnoreLabel", IgnoreLabel, int(swig.DPT_IGNORE_LABEL)},
		{"TextVocabulary", TextVocabulary, int(swig.DPT_TEXT_VOCABULARY)},
	}
	for _, p := range pairs {
		if p.goV != p.c {
			t.Errorf("%s = %d, the C header says %d", p.name, p.goV, p.c)
		}
	}
}

// The Go defaults of the loss scaling options, and AllreduceDtype's, ActivationDtype's, Shard's and the pipeline
// options' zero values, are the ones dpt_trainer_options_init writes.
func TestLossScaleDefaultsMatchTheLibrary(t *testing.T) {
	o := swig.NewTrainerOptions()
	defer swig.DeleteTrainerOptions(o)
	if got := o.GetInitial_loss_scale(); got != DefaultInitialLossScale {
		t.Errorf("DefaultInitialLossScale = %v, the library's default is %v", DefaultInitialLossScale, got)
	}
	if got := o.GetLoss_scale_growth_interval(); got != DefaultLossScaleGrowthInterval {
		t.Errorf("DefaultLossScaleGrowthInterval = %v, the library's default is %v", DefaultLossScaleGrowthInterval,
			got)
	}
	// TrainerOptions.AllreduceDtype's zero value, PrecisionFP32, is the library's default too.
	if got := Precision(o.GetAllreduce_dtype()); got != PrecisionFP32 {
		t.Errorf("the library's default allreduce_dtype is %d, not PrecisionFP32", got)
	}
	// TrainerOptions.ActivationDtype's zero value, PrecisionFP32, is the library's default too.
	if got := Precision(o.GetActivation_dtype()); got != PrecisionFP32 {
		t.Errorf("the library's default activation_dtype is %d, not PrecisionFP32", got)
	}
	// TrainerOptions.Shard's zero value, ShardNone, is the library's default too.
	if got := ShardMode(o.GetShard()); got != ShardNone {
		t.Errorf("the library's default shard is %d, not ShardNone", got)
	}
	if got := ShardScope(o.GetShard_scope()); got != ShardScopeProcess {
		t.Errorf("the library's default shard scope is %d, not ShardScopeProcess", got)
	}
	// TrainerOptions.PipelineStages' and MicroBatches' zero values (no pipeline; four micro-batches per stage),
	// PipelineSchedule's, Pipeline1F1B, and PipelineCuts', "" (balanced cuts), are the library's defaults too.
	if got := o.GetPipeline_stages(); got != 0 {
		t.Errorf("the library's default pipeline_stages is %d, not 0", got)
	}
	if got := o.GetMicro_batches(); got != 0 {
		t.Errorf("the library's default micro_batches is %d, not 0", got)
	}
	if got := PipelineSchedule(o.GetPipeline_schedule()); got != Pipeline1F1B {
		t.Errorf("the library's default pipeline_schedule is %d, not Pipeline1F1B", got)
	}
	if got := o.GetPipeline_cuts(); got != "" {
		t.Errorf("the library's default pipeline_cuts is %q, not empty", got)
	}
	// PipelineScope's and PipelineBalance's zero values, and PipelineBalanceBatch's.
	if got := PipelineScope(o.GetPipeline_scope()); got != PipelineScopeProcess {
		t.Errorf("the library's default pipeline_scope is %d, not PipelineScopeProcess", got)
	}
	if got := PipelineBalance(o.GetPipeline_balance()); got != PipelineBalanceWork {
		t.Errorf("the library's default pipeline_balance is %d, not PipelineBalanceWork", got)
	}
	if got := o.GetPipeline_balance_batch(); got != 0 {
		t.Errorf("the library's default pipeline_balance_batch is %d, not 0", got)
	}
}

// A library error with status BUSY (a second thread calling into the same trainer) matches ErrBusy, like the
// Go layer's own busy errors, as well as its status and category.
func TestLibraryBusyErrorIsErrBusy(t *testing.T) {
	err := error(libraryError("Trainer.Step", Status(swig.DPT_ERROR_BUSY), "dpt_trainer_step: busy"))
	if !errors.Is(err, ErrBusy) || !errors.Is(err, StatusBusy) || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("errors.Is(%v): ErrBusy %v, StatusBusy %v, ErrInvalidArgument %v", err, errors.Is(err, ErrBusy),
			errors.Is(err, StatusBusy), errors.Is(err, ErrInvalidArgument))
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, StatusInvalidState) {
		t.Fatalf("%v matches ErrClosed or StatusInvalidState", err)
	}
	if got, want := err.Error(), "dptrain: Trainer.Step: busy: dpt_trainer_step: busy"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	// Other library errors wrap nothing.
	if e := libraryError("Trainer.Step", StatusSizeMismatch, "m"); e.Err != nil || errors.Is(e, ErrBusy) {
		t.Fatalf("a size mismatch wraps %v", e.Err)
	}
}
