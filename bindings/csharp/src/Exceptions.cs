// Exceptions of the C# binding: one class per status category of the C API (see status.h).
using System;

namespace DPTrain {

/// <summary>A dptrain call failed. Carries the library's status, its category and its message.</summary>
/// <remarks>Thrown as one of the category subclasses; catch this class to handle every library error.</remarks>
public class DptrainException : Exception {
  /// <summary>The status the C API returned (e.g. <see cref="DPTrain.Status.SizeMismatch"/>).</summary>
  public Status Status { get; private set; }

  /// <summary>The status as its pinned integer value, e.g. 1003.</summary>
  public int StatusCode { get { return (int)Status; } }

  /// <summary>The status rounded down to thousands: 1000 invalid argument, 2000 unsupported, 3000 device,
  /// 4000 communication, 5000 I/O and format, 9000 internal.</summary>
  public int Category { get; private set; }

  /// <summary>The library's one-line message (dpt_last_error_message), without the status prefix.</summary>
  public string LibraryMessage { get; private set; }

  /// <summary>Creates an exception for a status; prefer <see cref="FromStatus"/>, which picks the subclass.</summary>
  public DptrainException(Status status, int category, string libraryMessage)
      : base(Format(status, libraryMessage)) {
    Status = status;
    Category = category;
    LibraryMessage = libraryMessage ?? "";
  }

  static string Format(Status status, string libraryMessage) {
    string name = Library.StatusString(status);
    return string.IsNullOrEmpty(libraryMessage)
        ? string.Format("{0} ({1})", name, (int)status)
        : string.Format("{0} ({1}): {2}", name, (int)status, libraryMessage);
  }

  /// <summary>The exception of the right category class for a status and the library's message.</summary>
  public static DptrainException FromStatus(int status, int category, string message) {
    Status s = (Status)status;
    switch (category) {
      case 1000: return new InvalidArgumentException(s, message);
      case 2000: return new UnsupportedException(s, message);
      case 3000: return new DeviceException(s, message);
      case 4000: return new CommunicationException(s, message);
      case 5000: return new IOFormatException(s, message);
      case 9000: return new InternalException(s, message);
      default: return new DptrainException(s, category, message);
    }
  }
}

/// <summary>Status 1000s: an argument, buffer length, index or state the call does not accept, or a handle
/// another thread is calling into (<see cref="DPTrain.Status.Busy"/>).</summary>
public class InvalidArgumentException : DptrainException {
  /// <summary>An exception for <paramref name="status"/> with the library's
  /// <paramref name="message"/>.</summary>
  public InvalidArgumentException(Status status, string message) : base(status, 1000, message) {}
}

/// <summary>Status 2000s: the operation or configuration is not supported.</summary>
public class UnsupportedException : DptrainException {
  /// <summary>An exception for <paramref name="status"/> with the library's
  /// <paramref name="message"/>.</summary>
  public UnsupportedException(Status status, string message) : base(status, 2000, message) {}
}

/// <summary>Status 3000s: a device failed, ran out of memory or does not exist.</summary>
public class DeviceException : DptrainException {
  /// <summary>An exception for <paramref name="status"/> with the library's
  /// <paramref name="message"/>.</summary>
  public DeviceException(Status status, string message) : base(status, 3000, message) {}
}

/// <summary>Status 4000s: a collective operation failed or timed out.</summary>
public class CommunicationException : DptrainException {
  /// <summary>An exception for <paramref name="status"/> with the library's
  /// <paramref name="message"/>.</summary>
  public CommunicationException(Status status, string message) : base(status, 4000, message) {}
}

/// <summary>Status 5000s: a file could not be read or written, or has invalid content.</summary>
public class IOFormatException : DptrainException {
  /// <summary>An exception for <paramref name="status"/> with the library's
  /// <paramref name="message"/>.</summary>
  public IOFormatException(Status status, string message) : base(status, 5000, message) {}
}

/// <summary>Status 9000s: a bug in dptrain; please report it with the message.</summary>
public class InternalException : DptrainException {
  /// <summary>An exception for <paramref name="status"/> with the library's
  /// <paramref name="message"/>.</summary>
  public InternalException(Status status, string message) : base(status, 9000, message) {}
}

}
