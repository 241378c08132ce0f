// Hand-written half of TrainerOptions (the generated half, with the other options, is produced by SWIG).
namespace DPTrain {

public partial class TrainerOptions {
  /// <summary>The precision of the model's matrix products (conv2d, dense, linear, causal self-attention):
  /// <see cref="DPTrain.Precision.Fp32"/> (the default, float32 throughout) or
  /// <see cref="DPTrain.Precision.Bf16"/>, mixed precision: every matrix product takes its inputs rounded to
  /// bfloat16 and accumulates in float32, while everything else (the parameters, activations, gradients, the
  /// loss and the optimizer) stays float32.</summary>
  /// <remarks>CPU devices only in this version: a trainer on CUDA devices refuses <c>Bf16</c> with
  /// <see cref="UnsupportedException"/> (<see cref="Status.Unsupported"/>); a value outside the enum is
  /// <see cref="InvalidArgumentException"/> (<see cref="Status.InvalidArgument"/>) when the trainer is
  /// created.</remarks>
  public Precision Precision {
    get { return PrecisionNative; }
    set { PrecisionNative = value; }
  }
}

}
