// Where .NET (5 and later) finds libctxpack when its own probing does not.
//
// .NET's own probing comes first and covers the usual cases: a PackageReference to the
// NuGet package (the host reads runtimes/<rid>/native/ from the application's deps.json),
// a library copied next to the application, or one on the loader's search path. This
// fallback runs only when all of those fail (AssemblyLoadContext.ResolvingUnmanagedDll is
// raised last, after the default probing), so it never overrides a library the
// application chose, and it leaves NativeLibrary.SetDllImportResolver free for the
// application (an assembly accepts a single resolver). It tries, in order:
//   * the package layout around Ctxpack.dll, for an assembly referenced in place from an
//     unpacked package (lib/<tfm>/Ctxpack.dll with ../../runtimes/<rid>/native/) or from
//     an output folder that kept the runtimes/<rid>/native/ tree without a deps.json;
//   * the soname, libctxpack.so.MAJOR, for a system with only the runtime package of a
//     distribution installed (no libctxpack.so development link).
//
// Mono and the .NET Framework compile this file to nothing (it needs .NET 5's
// ModuleInitializer): Mono looks for the library in the folder of Ctxpack.dll, which is
// where the package's libctxpack.so goes in a flat deployment (README.md, "Install").
#if NET5_0_OR_GREATER
using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Runtime.Loader;

namespace Ctxpack
{
    /// <summary>Registers the fallback search for the native library when the assembly
    /// is loaded.</summary>
    internal static class NativeLibraryFallback
    {
        [ModuleInitializer]
        internal static void Register()
        {
            Assembly self = typeof(NativeLibraryFallback).Assembly;
            AssemblyLoadContext? context = AssemblyLoadContext.GetLoadContext(self);
            if (context != null)
            {
                context.ResolvingUnmanagedDll += Resolve;
            }
        }

        private static IntPtr Resolve(Assembly assembly, string name)
        {
            if (name != Native.Lib || assembly != typeof(NativeLibraryFallback).Assembly)
            {
                return IntPtr.Zero;
            }
            foreach (string candidate in Candidates(assembly))
            {
                if (NativeLibrary.TryLoad(candidate, out IntPtr handle))
                {
                    return handle;
                }
            }
            return IntPtr.Zero;
        }

        private static IEnumerable<string> Candidates(Assembly assembly)
        {
            string? file = FileName();
            string? rid = RuntimeIdentifier();
            string directory = Path.GetDirectoryName(assembly.Location) ?? "";
            if (file != null && rid != null && directory.Length > 0)
            {
                string native = Path.Combine("runtimes", rid, "native", file);
                yield return Path.Combine(directory, native);
                yield return Path.GetFullPath(Path.Combine(directory, "..", "..", native));
            }
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Linux))
            {
                // The assembly's major version is the library's (both come from one release).
                yield return "libctxpack.so." + assembly.GetName().Version?.Major;
            }
        }

        // The file name NuGet's runtimes/<rid>/native/ folder holds on each platform.
        private static string? FileName()
        {
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Linux)) return "libctxpack.so";
            if (RuntimeInformation.IsOSPlatform(OSPlatform.OSX)) return "libctxpack.dylib";
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Windows)) return "ctxpack.dll";
            return null;
        }

        // The portable runtime identifier (linux-x64, osx-arm64, win-x64...), the name of
        // the folder under runtimes/.
        private static string? RuntimeIdentifier()
        {
            string os;
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Linux)) os = "linux";
            else if (RuntimeInformation.IsOSPlatform(OSPlatform.OSX)) os = "osx";
            else if (RuntimeInformation.IsOSPlatform(OSPlatform.Windows)) os = "win";
            else return null;
            switch (RuntimeInformation.ProcessArchitecture)
            {
                case Architecture.X64: return os + "-x64";
                case Architecture.Arm64: return os + "-arm64";
                case Architecture.X86: return os + "-x86";
                case Architecture.Arm: return os + "-arm";
                default: return null;
            }
        }
    }
}
#endif
