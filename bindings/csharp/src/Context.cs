// Hand-written half of Context (the generated half is produced by SWIG from dptrain.i).
namespace DPTrain {

/// <summary>The devices dptrain may use: CPU devices, each with its own worker thread and memory arena.</summary>
/// <remarks>Trainers share the context's devices: disposing the context does not dispose or break its trainers
/// (the C API allows either order), each is disposed on its own. One object, one thread at a time.</remarks>
public partial class Context {
  /// <summary>Number of devices, CPU and CUDA together.</summary>
  public ulong DeviceCount { get { return GetDeviceCount(); } }

  /// <summary>A description of every device, in index order.</summary>
  public DeviceInfo[] GetDevices() {
    ulong n = GetDeviceCount();
    var devices = new DeviceInfo[n];
    for (ulong i = 0; i < n; ++i) devices[i] = GetDeviceInfo(i);
    return devices;
  }
}

public partial class DeviceInfo {
  /// <summary>The device's <see cref="Name"/>.</summary>
  public override string ToString() { return Name; }
}

}
