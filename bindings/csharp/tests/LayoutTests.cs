using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;

namespace Ctxpack.Tests
{
    /// Every struct of ctxpack.h has a C# mirror in Native with the same size and the same
    /// offset for each field. The expected values come from tests/layout.c, compiled by
    /// run.sh against the header (CTXPACK_LAYOUT_FILE).
    static class LayoutTests
    {
        static readonly Dictionary<string, Type> Mirrors = new Dictionary<string, Type>
        {
            ["ctxpack_str"] = typeof(Native.Str),
            ["ctxpack_reserved_slot"] = typeof(Native.ReservedSlot),
            ["ctxpack_metadata_entry"] = typeof(Native.MetadataEntry),
            ["ctxpack_item_desc"] = typeof(Native.ItemDesc),
            ["ctxpack_budget_desc"] = typeof(Native.BudgetDesc),
            ["ctxpack_pipeline_options"] = typeof(Native.PipelineOptions),
            ["ctxpack_run_options"] = typeof(Native.RunOptions),
            ["ctxpack_item_view"] = typeof(Native.ItemView),
            ["ctxpack_callback_error"] = typeof(Native.CallbackError),
            ["ctxpack_report_summary"] = typeof(Native.ReportSummary),
            ["ctxpack_included_entry"] = typeof(Native.IncludedEntry),
            ["ctxpack_excluded_entry"] = typeof(Native.ExcludedEntry),
            ["ctxpack_trace_event"] = typeof(Native.TraceEvent),
            ["ctxpack_shortfall"] = typeof(Native.Shortfall),
            ["ctxpack_group_entry"] = typeof(Native.GroupEntry),
            ["ctxpack_pruned_form"] = typeof(Native.PrunedForm),
            ["ctxpack_variant_desc"] = typeof(Native.VariantDesc),
            ["ctxpack_kind_weight"] = typeof(Native.KindWeight),
            ["ctxpack_tag_weight"] = typeof(Native.TagWeight),
            ["ctxpack_composite_child"] = typeof(Native.CompositeChild),
            ["ctxpack_decay_window"] = typeof(Native.DecayWindow),
            ["ctxpack_decay_config"] = typeof(Native.DecayConfig),
            ["ctxpack_quota_entry"] = typeof(Native.QuotaEntry),
            ["ctxpack_count_quota_entry"] = typeof(Native.CountQuotaEntry),
            ["ctxpack_kind_quota_utilization"] = typeof(Native.KindQuotaUtilization),
            ["ctxpack_sensitivity_variant"] = typeof(Native.SensitivityVariant),
            ["ctxpack_json_read_options"] = typeof(Native.JsonReadOptions),
            ["ctxpack_json_warning"] = typeof(Native.JsonWarning),
            ["ctxpack_chat_options"] = typeof(Native.ChatOptions),
            ["ctxpack_prefix_options"] = typeof(Native.PrefixOptions),
            ["ctxpack_prefix_reuse"] = typeof(Native.PrefixReuse),
        };

        /// has_future_relevance_hint -> HasFutureRelevanceHint
        static string Pascal(string snake) =>
            string.Concat(snake.Split('_').Select(p => char.ToUpperInvariant(p[0]) + p.Substring(1)));

        [Test]
        public static void StructsMatchTheHeader()
        {
            var file = Environment.GetEnvironmentVariable("CTXPACK_LAYOUT_FILE");
            if (string.IsNullOrEmpty(file)) throw new SkipException("CTXPACK_LAYOUT_FILE is not set (run.sh sets it)");
            var fieldsSeen = new Dictionary<Type, int>();
            var structs = 0;
            foreach (var line in File.ReadAllLines(file))
            {
                var parts = line.Split(' ');
                if (parts.Length == 3 && parts[1] == "size")
                {
                    Assert.True(Mirrors.TryGetValue(parts[0], out var t), $"{parts[0]} has no C# mirror in Native");
                    Assert.Equal(int.Parse(parts[2], CultureInfo.InvariantCulture), Marshal.SizeOf(t), $"sizeof({parts[0]})");
                    structs++;
                    continue;
                }
                var dot = parts[0].IndexOf('.');
                var type = Mirrors[parts[0].Substring(0, dot)];
                var field = Pascal(parts[0].Substring(dot + 1));
                Assert.True(type.GetField(field) != null, $"{type.Name} lacks the field {field} ({parts[0]})");
                Assert.Equal(long.Parse(parts[1], CultureInfo.InvariantCulture), Marshal.OffsetOf(type, field).ToInt64(), $"offsetof({parts[0]})");
                fieldsSeen[type] = fieldsSeen.TryGetValue(type, out var n) ? n + 1 : 1;
            }
            Assert.Equal(Mirrors.Count, structs, "structs in the header");
            foreach (var t in Mirrors.Values)
            {
                Assert.Equal(t.GetFields().Length, fieldsSeen.TryGetValue(t, out var n) ? n : 0, $"fields of {t.Name}");
            }
        }
    }
}
