// Built by check_nupkg.sh against the restored package's lib/net45/DPTrain.dll: prints the assembly's versions,
// the native library's version, and the files the process mapped for libdptrain and the wrapper.
using System;
using System.IO;
using System.Linq;
using System.Reflection;

class PackageInfo {
  static void Main() {
    Assembly assembly = typeof(DPTrain.Context).Assembly;
    var informational = (AssemblyInformationalVersionAttribute)Attribute.GetCustomAttribute(
        assembly, typeof(AssemblyInformationalVersionAttribute));
    Console.WriteLine("assembly_version " + assembly.GetName().Version);
    Console.WriteLine("informational_version " +
                      (informational == null ? "none" : informational.InformationalVersion));
    Console.WriteLine("assembly_path " + Path.GetFullPath(assembly.Location));
    Console.WriteLine("library_version " + DPTrain.Library.Version); // the first native call
    foreach (string path in File.ReadAllLines("/proc/self/maps").Select(l => l.Split(' ').Last())
                 .Where(p => Path.GetFileName(p).StartsWith("libdptrain")).Distinct())
      Console.WriteLine("mapped " + path);
  }
}
