// Built by check_nupkg.sh (and check_nupkg_windows.sh) against the package's lib/net45/DPTrain.dll: prints the
// assembly's versions, the native library's version, and the files the process loaded for libdptrain (dptrain.dll)
// and the wrapper.
using System;
using System.Collections.Generic;
using System.Diagnostics;
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
    // Linux: the files the process mapped; Windows (check_nupkg_windows.sh): the modules it loaded.
    IEnumerable<string> loaded =
        Environment.OSVersion.Platform == PlatformID.Unix
            ? File.ReadAllLines("/proc/self/maps").Select(l => l.Split(' ').Last())
            : Process.GetCurrentProcess().Modules.Cast<ProcessModule>().Select(m => m.FileName);
    foreach (string path in loaded.Where(p => Path.GetFileName(p).StartsWith("libdptrain") ||
                                             Path.GetFileName(p).StartsWith("dptrain"))
                 .Distinct())
      Console.WriteLine("mapped " + path);
  }
}
