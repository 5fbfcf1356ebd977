using System;
using System.Linq;
using System.Reflection;

namespace Ctxpack.Tests
{
    /// The members that take or return null carry the nullability attributes a
    /// nullable-aware build reads (src/Nullability.cs).
    static class NullabilityTests
    {
        static bool Has(ICustomAttributeProvider member, string attribute) =>
            member.GetCustomAttributes(false).Any(a => a.GetType().FullName == "System.Diagnostics.CodeAnalysis." + attribute);

        [Test]
        public static void NullableMembersAreAnnotated()
        {
            var maybeNullInAndOut = new[]
            {
                (typeof(ContextItem), "Kind"), (typeof(ContextItem), "Source"), (typeof(ContextItem), "Group"),
                (typeof(ContextItem), "Encoding"), (typeof(ChatOptions), "Encoding"), (typeof(ChatOptions), "Overheads"),
                (typeof(ChatOptions), "Prefix"), (typeof(ChatOptions), "PreviousState"), (typeof(ChatOptions), "Shorten"),
                (typeof(ChatShorten), "Marker"), (typeof(JsonReadOptions), "Registry"),
                (typeof(PrefixOptions), "Conversation"), (typeof(PrefixOptions), "CacheRule"),
            };
            foreach (var m in maybeNullInAndOut)
            {
                Type type = m.Item1;
                string name = m.Item2;
                var p = type.GetProperty(name);
                Assert.True(Has(p, "AllowNullAttribute") && Has(p, "MaybeNullAttribute"), $"{type.Name}.{name}");
            }
            foreach (var name in new[] { "Tags", "Metadata", "Variants" })
            {
                var p = typeof(ContextItem).GetProperty(name);
                Assert.True(Has(p, "AllowNullAttribute") && !Has(p, "MaybeNullAttribute"), $"ContextItem.{name}: null in, never out");
            }
            var maybeNullOut = new[]
            {
                (typeof(RunResult), "Overflow"), (typeof(RunResult), "Report"), (typeof(TracedRunResult), "Overflow"),
                (typeof(ChatResult), "Reuse"), (typeof(ChatResult), "State"), (typeof(Reuse), "Difference"),
            };
            foreach (var m in maybeNullOut)
            {
                Assert.True(Has(m.Item1.GetProperty(m.Item2), "MaybeNullAttribute"), $"{m.Item1.Name}.{m.Item2}");
            }
            var tryGet = typeof(ItemView).GetMethod("TryGetMetadata").GetParameters()[1];
            Assert.True(Has(tryGet, "MaybeNullWhenAttribute"), "ItemView.TryGetMetadata's value");
            var runPrefix = typeof(Pipeline).GetMethods().Where(m => m.Name == "RunPrefix").ToList();
            Assert.Equal(4, runPrefix.Count, "RunPrefix overloads");
            foreach (var m in runPrefix)
            {
                foreach (var p in m.GetParameters().Where(p => p.Name == "options" || p.Name == "previous"))
                    Assert.True(Has(p, "AllowNullAttribute"), $"RunPrefix({p.Name})");
            }
        }
    }
}
