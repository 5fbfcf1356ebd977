using System;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    /// <summary>The status codes of the C ABI (ctxpack_status; docs/ffi.md). 1-15 are the core
    /// engine's error kinds, 100 and above belong to the C layer.</summary>
    public enum Status
    {
        Ok = 0,
        EmptyContent = 1,
        EmptyKind = 2,
        EmptySource = 3,
        InvalidBudget = 4,
        PinnedExceedsBudget = 5,
        Overflow = 6,
        ScorerConfig = 7,
        SlicerConfig = 8,
        PipelineConfig = 9,
        TableTooLarge = 10,
        CountRequirementUnmet = 11,
        Callback = 12,
        TokenOverflow = 13,
        InvalidPolicy = 14,
        InvalidArgument = 15,
        OutOfMemory = 16,
        Unsupported = 17,
        Cancelled = 18,
        InvalidState = 19,
        InvalidRequest = 20,
        NullArgument = 100,
        InvalidUtf8 = 101,
        WrongHandleType = 102,
        OutOfRange = 103,
        NoReport = 104,
        Panic = 105,
    }

    /// <summary>A failed library call: its status and the library's message.</summary>
    public class CtxpackException : Exception
    {
        public CtxpackException(Status status, string message)
            : base(string.IsNullOrEmpty(message) ? StatusNames.Of(status) : StatusNames.Of(status) + ": " + message)
        {
            Status = status;
            LibraryMessage = message ?? "";
        }

        /// <summary>The status the library returned.</summary>
        public Status Status { get; }

        /// <summary>The library's message (empty for accessors, which return a status only).</summary>
        public string LibraryMessage { get; }
    }

    public static class StatusNames
    {
        /// <summary>The C name of a status ("CTXPACK_OVERFLOW"), as ctxpack_status_name
        /// returns it; "CTXPACK_UNKNOWN_STATUS" for a value the library does not know.</summary>
        public static string Of(Status status) => Marshal.PtrToStringAnsi(Native.ctxpack_status_name((int)status));
    }

    internal static class Errors
    {
        /// Throws for a failed call, reading and freeing the error object it stored (NULL
        /// for accessors).
        internal static void Check(int status, IntPtr error)
        {
            string message = null;
            if (error != IntPtr.Zero)
            {
                message = Native.ToManaged(Native.ctxpack_error_message(error));
                Native.ctxpack_error_free(error);
            }
            if (status != 0) throw new CtxpackException((Status)status, message);
        }

        internal static void Check(int status) => Check(status, IntPtr.Zero);
    }

    internal static class Arg
    {
        /// The argument, or ArgumentNullException: a null handle owner never reaches the library.
        internal static T NotNull<T>(T value, string name) where T : class =>
            value ?? throw new ArgumentNullException(name);
    }
}
