using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack
{
    /// <summary>Whether a quota counts percent of the target or items.</summary>
    public enum QuotaMode { Percentage = 0, Count = 1 }

    /// <summary>How fully one quota constraint is used.</summary>
    public sealed class KindQuotaUtilization
    {
        internal KindQuotaUtilization(Native.KindQuotaUtilization e)
        {
            Kind = Native.ToManaged(e.Kind);
            Mode = (QuotaMode)e.Mode;
            Require = e.Require;
            Cap = e.Cap;
            Actual = e.Actual;
            Utilization = e.Utilization;
        }

        public string Kind { get; }
        public QuotaMode Mode { get; }
        /// <summary>Percent of the target, or a count.</summary>
        public double Require { get; }
        /// <summary>Percent of the target, or a count.</summary>
        public double Cap { get; }
        /// <summary>The included share of the target in percent, or the included count.</summary>
        public double Actual { get; }
        /// <summary>Actual / Cap clamped to [0, 1] (0 when the cap is 0).</summary>
        public double Utilization { get; }
    }

    /// <summary>The report helpers of spec 07 §7, computed for every traced result.</summary>
    public sealed class ReportAnalytics
    {
        /// <summary>Included tokens over the budget's max tokens (not clamped).</summary>
        public double BudgetUtilization { get; private set; }
        /// <summary>Distinct kinds among the included items.</summary>
        public int KindDiversity { get; private set; }
        /// <summary>Share of included items with a timestamp.</summary>
        public double TimestampCoverage { get; private set; }
        /// <summary>One entry per quota constraint of the pipeline's slicer, sorted by kind.</summary>
        public IReadOnlyList<KindQuotaUtilization> QuotaUtilization { get; private set; }

        // The result keeps its run's budget and slicer, which these helpers need.
        internal static ReportAnalytics Read(ResultHandle result)
        {
            Errors.Check(Native.ctxpack_result_budget_utilization(result, out double use));
            Errors.Check(Native.ctxpack_result_kind_diversity(result, out var kinds));
            Errors.Check(Native.ctxpack_result_timestamp_coverage(result, out double coverage));
            Errors.Check(Native.ctxpack_result_quota_utilization(result, out var quota, out var error), error);
            var entries = new List<KindQuotaUtilization>();
            using (quota)
            {
                Errors.Check(Native.ctxpack_quota_utilization_count(quota, out var n));
                for (ulong i = 0; i < n.ToUInt64(); i++)
                {
                    var e = new Native.KindQuotaUtilization();
                    Native.ctxpack_kind_quota_utilization_init(ref e, Native.Size<Native.KindQuotaUtilization>());
                    Errors.Check(Native.ctxpack_quota_utilization_entry(quota, (UIntPtr)i, ref e, out error), error);
                    entries.Add(new KindQuotaUtilization(e));
                }
            }
            return new ReportAnalytics
            {
                BudgetUtilization = use,
                KindDiversity = checked((int)kinds.ToUInt64()),
                TimestampCoverage = coverage,
                QuotaUtilization = entries,
            };
        }
    }

    /// <summary>Whether a variant includes an item.</summary>
    public enum ItemStatus { Included = 1, Excluded = 2 }

    /// <summary>One labelled pipeline of a sensitivity comparison.</summary>
    public struct SensitivityVariant
    {
        public SensitivityVariant(string label, Pipeline pipeline) { Label = label; Pipeline = pipeline; }
        public string Label { get; }
        public Pipeline Pipeline { get; }
    }

    /// <summary>An item whose inclusion differs between variants.</summary>
    public sealed class Swing
    {
        internal Swing(int index, ItemStatus[] statuses) { Index = index; Statuses = statuses; }
        /// <summary>The item's position in the items.</summary>
        public int Index { get; }
        /// <summary>One status per variant, in variant order.</summary>
        public IReadOnlyList<ItemStatus> Statuses { get; }
    }

    /// <summary>A sensitivity comparison (spec 07 §6): two or more labelled pipelines dry-run over
    /// the same items and budget, and the items whose inclusion swings between them.</summary>
    public sealed class Sensitivity
    {
        /// <summary>The labels, in variant order.</summary>
        public IReadOnlyList<string> Labels { get; private set; }
        /// <summary>Each variant's dry-run result, in variant order.</summary>
        public IReadOnlyList<RunResult> Results { get; private set; }
        /// <summary>The swinging items, in the order of the item list.</summary>
        public IReadOnlyList<Swing> Swings { get; private set; }

        /// <summary>Compares the variants over items (copied into a temporary list; the
        /// ItemList overload takes a list).</summary>
        public static Sensitivity Compare(IReadOnlyList<ContextItem> items, Budget budget, params SensitivityVariant[] variants)
        {
            Arg.NotNull(budget, nameof(budget));
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return Compare(list, budget, variants);
            }
        }

        /// <summary>Compares the variants over an item list (Swing indices are positions in it).</summary>
        public static unsafe Sensitivity Compare(ItemList items, Budget budget, params SensitivityVariant[] variants)
        {
            Arg.NotNull(items, nameof(items));
            Arg.NotNull(budget, nameof(budget));
            Arg.NotNull(variants, nameof(variants));
            var list = items;
            using (var arena = new NativeArena())
            using (var refs = new HandleRefs())
            {
                var array = (Native.SensitivityVariant*)arena.Array<Native.SensitivityVariant>(variants.Length);
                for (int i = 0; i < variants.Length; i++)
                {
                    var pipeline = Arg.NotNull(variants[i].Pipeline, nameof(variants));
                    array[i] = new Native.SensitivityVariant { Label = arena.Str(variants[i].Label), Pipeline = refs.Add(pipeline.Handle) };
                }
                Errors.Check(Native.ctxpack_sensitivity_new(list.Handle, budget.Handle, (IntPtr)array, (UIntPtr)variants.Length,
                    out var sensitivity, out var error), error);
                using (sensitivity)
                {
                    var labels = new List<string>();
                    var results = new List<RunResult>();
                    Errors.Check(Native.ctxpack_sensitivity_variant_count(sensitivity, out var n));
                    for (ulong i = 0; i < n.ToUInt64(); i++)
                    {
                        Errors.Check(Native.ctxpack_sensitivity_variant_label(sensitivity, (UIntPtr)i, out var label));
                        labels.Add(Native.ToManaged(label));
                        Errors.Check(Native.ctxpack_sensitivity_variant_result(sensitivity, (UIntPtr)i, out var result, out var e), e);
                        using (result) results.Add(RunResult.Read(result));
                    }
                    var swings = new List<Swing>();
                    Errors.Check(Native.ctxpack_sensitivity_diff_count(sensitivity, out var d));
                    for (ulong i = 0; i < d.ToUInt64(); i++)
                    {
                        Errors.Check(Native.ctxpack_sensitivity_diff(sensitivity, (UIntPtr)i, out var index, out var statuses, out var count));
                        var s = new ItemStatus[checked((int)count.ToUInt64())];
                        for (int k = 0; k < s.Length; k++) s[k] = (ItemStatus)((int*)statuses)[k];
                        swings.Add(new Swing(checked((int)index.ToUInt64()), s));
                    }
                    return new Sensitivity { Labels = labels, Results = results, Swings = swings };
                }
            }
        }
    }
}
