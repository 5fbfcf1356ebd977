// A minimal test runner (no NUnit/xUnit on these machines): every public static method
// marked [Test] in this assembly runs once; a thrown exception fails it. The last line
// printed is "N passed, M failed"; the exit code is non-zero on any failure.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Reflection;

namespace Ctxpack.Tests
{
    [AttributeUsage(AttributeTargets.Method)]
    sealed class TestAttribute : Attribute { }

    /// Thrown by a test that cannot run in this environment; counted as neither passed nor failed.
    sealed class SkipException : Exception
    {
        public SkipException(string reason) : base(reason) { }
    }

    sealed class AssertionException : Exception
    {
        public AssertionException(string message) : base(message) { }
    }

    static class Assert
    {
        public static void True(bool condition, string message = "expected true")
        {
            if (!condition) throw new AssertionException(message);
        }

        public static void Equal<T>(T expected, T actual, string what = "value")
        {
            if (!EqualityComparer<T>.Default.Equals(expected, actual))
                throw new AssertionException($"{what}: expected {Show(expected)}, got {Show(actual)}");
        }

        public static void Near(double expected, double actual, string what = "value", double eps = 1e-9)
        {
            if (!(Math.Abs(expected - actual) < eps))
                throw new AssertionException($"{what}: expected {expected:R}, got {actual:R} (eps {eps})");
        }

        public static void Sequence<T>(IEnumerable<T> expected, IEnumerable<T> actual, string what = "sequence")
        {
            if (!expected.SequenceEqual(actual))
                throw new AssertionException($"{what}: expected [{string.Join(", ", expected)}], got [{string.Join(", ", actual)}]");
        }

        public static void Near(IEnumerable<double> expected, IEnumerable<double> actual, string what = "scores")
        {
            var e = expected.ToList();
            var a = actual.ToList();
            if (e.Count != a.Count || e.Zip(a, (x, y) => Math.Abs(x - y) < 1e-9).Any(ok => !ok))
                throw new AssertionException($"{what}: expected [{string.Join(", ", e)}], got [{string.Join(", ", a)}]");
        }

        public static T Throws<T>(Action action, string what = "call") where T : Exception
        {
            try
            {
                action();
            }
            catch (T e)
            {
                return e;
            }
            catch (Exception e)
            {
                throw new AssertionException($"{what}: expected {typeof(T).Name}, got {e.GetType().Name}: {e.Message}");
            }
            throw new AssertionException($"{what}: expected {typeof(T).Name}, nothing was thrown");
        }

        /// The call fails with a CtxpackException of the given status.
        public static CtxpackException Fails(Status status, Action action, string what = null)
        {
            var e = Throws<CtxpackException>(action, what ?? status.ToString());
            Equal(status, e.Status, (what ?? "call") + " status");
            return e;
        }

        static string Show<T>(T v) => v == null ? "null" : v is string s ? "\"" + s + "\"" : v.ToString();
    }

    static class Program
    {
        static int Main(string[] args)
        {
            var filter = args.FirstOrDefault();
            var tests = typeof(Program).Assembly.GetTypes()
                .SelectMany(t => t.GetMethods(BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static))
                .Where(m => m.GetCustomAttribute<TestAttribute>() != null)
                .Select(m => (name: m.DeclaringType.Name + "." + m.Name, method: m))
                .Where(t => filter == null || t.name.Contains(filter))
                .OrderBy(t => t.name, StringComparer.Ordinal)
                .ToList();
            int passed = 0, failed = 0, skipped = 0;
            foreach (var test in tests)
            {
                var (name, method) = test;
                try
                {
                    method.Invoke(null, null);
                    passed++;
                    Console.WriteLine($"ok   {name}");
                }
                catch (TargetInvocationException e) when (e.InnerException is SkipException s)
                {
                    skipped++;
                    Console.WriteLine($"skip {name}: {s.Message}");
                }
                catch (TargetInvocationException e)
                {
                    failed++;
                    var inner = e.InnerException;
                    Console.WriteLine($"FAIL {name}: {inner.GetType().Name}: {inner.Message}");
                    if (!(inner is AssertionException)) Console.WriteLine("    " + inner.StackTrace?.Replace("\n", "\n    "));
                }
            }
            if (skipped > 0) Console.WriteLine($"{skipped} skipped");
            Console.WriteLine($"{passed} passed, {failed} failed");
            return failed == 0 && passed > 0 ? 0 : 1;
        }
    }
}
