using System;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;

namespace Ctxpack.Tests
{
    /// Every native import of the binding names a function of the header and uses the C
    /// calling convention explicitly, and so does every delegate the library calls back.
    static class ImportTests
    {
        static MethodInfo[] Imports() =>
            typeof(Native).Assembly.GetTypes()
                .SelectMany(t => t.GetMethods(BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.DeclaredOnly))
                .Where(m => (m.Attributes & MethodAttributes.PinvokeImpl) != 0)
                .ToArray();

        [Test]
        public static void EveryImportIsCdeclAndInTheHeader()
        {
            var imports = Imports();
            // The binding imports well over a hundred functions; finding few means the
            // reflection no longer sees them.
            Assert.True(imports.Length > 100, $"only {imports.Length} imports found");
            var header = File.ReadAllText(Path.Combine(Environment.GetEnvironmentVariable("CTXPACK_REPO_ROOT") ?? "../..",
                "include", "ctxpack.h"));
            foreach (var m in imports)
            {
                var attr = m.GetCustomAttributes(typeof(DllImportAttribute), false).Cast<DllImportAttribute>().SingleOrDefault();
                Assert.True(attr != null, $"{m.DeclaringType.Name}.{m.Name}: no DllImportAttribute");
                Assert.Equal(CallingConvention.Cdecl, attr.CallingConvention, $"{m.DeclaringType.Name}.{m.Name} calling convention");
                Assert.Equal("ctxpack", attr.Value, $"{m.DeclaringType.Name}.{m.Name} library");
                var name = attr.EntryPoint ?? m.Name;
                Assert.True(header.Contains(" " + name + "(") || header.Contains("*" + name + "("), $"{name} is not a function of include/ctxpack.h");
            }
        }

        [Test]
        public static void EveryCallbackDelegateIsCdecl()
        {
            var delegates = typeof(Native).GetNestedTypes(BindingFlags.NonPublic | BindingFlags.Public)
                .Where(t => typeof(Delegate).IsAssignableFrom(t)).ToArray();
            Assert.True(delegates.Length >= 4, $"only {delegates.Length} callback delegates found");
            foreach (var t in delegates)
            {
                var attr = t.GetCustomAttributes(typeof(UnmanagedFunctionPointerAttribute), false)
                    .Cast<UnmanagedFunctionPointerAttribute>().SingleOrDefault();
                Assert.True(attr != null && attr.CallingConvention == CallingConvention.Cdecl, $"{t.Name} is not Cdecl");
            }
        }
    }
}
