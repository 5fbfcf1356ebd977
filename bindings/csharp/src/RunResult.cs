using System;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Linq;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    /// <summary>Why an item is in the final window.</summary>
    public enum InclusionReason { Scored = 1, Pinned = 2, ZeroToken = 3, Downgraded = 4 }

    /// <summary>Why an item is in the window as a cheaper variant (IncludedEntry.Cause).</summary>
    public enum DowngradeCause { None = 0, BudgetExceeded = 1, SlicerChoice = 2, Truncated = 3 }

    /// <summary>Why an item is not in the final window (spec 06 §7); the wire name is in
    /// ExcludedEntry.Name.</summary>
    public enum ExclusionReason
    {
        Unknown = 0,
        BudgetExceeded = 1,
        ScoredTooLow = 2,
        Deduplicated = 3,
        QuotaCapExceeded = 4,
        QuotaRequireDisplaced = 5,
        NegativeTokens = 6,
        PinnedOverride = 7,
        Filtered = 8,
        CountCapExceeded = 9,
        CountRequireCandidatesExhausted = 10,
        /// <summary>The item's group was left out because another member was
        /// (docs/groups.md); see ExcludedEntry.Group and the Member properties.</summary>
        GroupExcluded = 11,
    }

    /// <summary>Whether a group of a report is in the window.</summary>
    public enum GroupDecision { Included = 1, Excluded = 2 }

    /// <summary>A traced pipeline stage.</summary>
    public enum PipelineStage { Classify = 0, Score = 1, Deduplicate = 2, Slice = 3, Place = 4 }

    /// <summary>The outcome of a run, copied out of the library's result (which is freed
    /// before Run returns).</summary>
    public sealed class RunResult
    {
        /// <summary>The selected items as positions in the input, in placed order.</summary>
        public IReadOnlyList<int> Indices { get; private set; }

        /// <summary>Scores parallel to Indices (1.0 for pinned items).</summary>
        public IReadOnlyList<double> Scores { get; private set; }

        /// <summary>Inclusion reasons parallel to Indices.</summary>
        public IReadOnlyList<InclusionReason> Reasons { get; private set; }

        /// <summary>The form of each placed item, parallel to Indices: 0 in full, f &gt;= 1 its
        /// Variants[f - 1] (whose content and tokens go into the window).</summary>
        public IReadOnlyList<int> Forms { get; private set; }

        /// <summary>The overflow event of a Proceed run over target, else null.</summary>
        [MaybeNull] public OverflowEvent Overflow { get; private set; }

        /// <summary>The report of a traced run, else null.</summary>
        [MaybeNull] public SelectionReport Report { get; private set; }

        /// Copies a result; the pipeline and budget of the run feed the report's analytics.
        internal static RunResult Read(ResultHandle result)
        {
            var r = ReadSelection(result);
            Errors.Check(Native.ctxpack_result_has_report(result, out bool hasReport));
            if (hasReport)
            {
                r.Report = SelectionReport.Read(result);
                r.Report.Analytics = ReportAnalytics.Read(result);
            }
            return r;
        }

        /// Copies the selection and the overflow event, not the report.
        internal static RunResult ReadSelection(ResultHandle result)
        {
            Errors.Check(Native.ctxpack_result_indices(result, out var idx, out var n));
            Errors.Check(Native.ctxpack_result_scores(result, out var sc, out var ns));
            Errors.Check(Native.ctxpack_result_reasons(result, out var rs, out var nr));
            var scores = new double[checked((int)ns.ToUInt64())];
            if (scores.Length > 0) Marshal.Copy(sc, scores, 0, scores.Length);
            var reasons = new int[checked((int)nr.ToUInt64())];
            if (reasons.Length > 0) Marshal.Copy(rs, reasons, 0, reasons.Length);
            var r = new RunResult
            {
                Indices = Slicer.Positions(idx, n),
                Scores = scores,
                Reasons = reasons.Select(x => (InclusionReason)x).ToArray(),
            };
            Errors.Check(Native.ctxpack_result_forms(result, out var fs, out var nf));
            r.Forms = Slicer.Positions(fs, nf);
            Errors.Check(Native.ctxpack_result_overflow(result, out bool present, out long over, out var items, out var ni));
            if (present) r.Overflow = new OverflowEvent(over, Slicer.Positions(items, ni));
            return r;
        }
    }

    /// <summary>The overflow event of a Proceed run.</summary>
    public sealed class OverflowEvent
    {
        internal OverflowEvent(long tokensOverBudget, int[] items) { TokensOverBudget = tokensOverBudget; Items = items; }

        public long TokensOverBudget { get; }

        /// <summary>The merged items (pinned first, then sliced) as positions in the input.</summary>
        public IReadOnlyList<int> Items { get; }
    }

    /// <summary>The selection report of a traced run.</summary>
    public sealed class SelectionReport
    {
        public int TotalCandidates { get; private set; }

        /// <summary>Sum of every input item's tokens, negative ones included.</summary>
        public long TotalTokensConsidered { get; private set; }

        /// <summary>Whether the exact total did not fit in 64 bits (TotalTokensConsidered is
        /// then the nearest value; Json has the exact number).</summary>
        public bool TotalTokensSaturated { get; private set; }

        /// <summary>Items in the final window, placed order.</summary>
        public IReadOnlyList<IncludedEntry> Included { get; private set; }

        /// <summary>Items left out, score descending (ties in recording order).</summary>
        public IReadOnlyList<ExcludedEntry> Excluded { get; private set; }

        /// <summary>Trace events, in recording order.</summary>
        public IReadOnlyList<TraceEvent> Events { get; private set; }

        /// <summary>Count requirements a count-quota slicer could not meet.</summary>
        public IReadOnlyList<Shortfall> Shortfalls { get; private set; }

        /// <summary>The item groups of the input, in order of their first member (none when
        /// no item has a Group).</summary>
        public IReadOnlyList<GroupEntry> Groups { get; private set; }
        /// <summary>The variants no selection could need, input order then form order.</summary>
        public IReadOnlyList<PrunedForm> PrunedForms { get; private set; }

        /// <summary>The report in the JSON wire form of spec 06 §10.</summary>
        public string Json { get; private set; }

        /// <summary>The report helpers of spec 07 §7 for this run.</summary>
        public ReportAnalytics Analytics { get; internal set; }

        // Each entry struct starts with struct_size, set by its _init function to this
        // binding's size so the library writes exactly the fields it knows about.
        internal static SelectionReport Read(ResultHandle result)
        {
            var sum = ReadSummary(result);
            return new SelectionReport
            {
                TotalCandidates = checked((int)sum.TotalCandidates.ToUInt64()),
                TotalTokensConsidered = sum.TotalTokensConsidered,
                TotalTokensSaturated = sum.TotalTokensSaturated != 0,
                Included = ReadIncluded(result, sum.IncludedCount),
                Excluded = ReadExcluded(result, sum.ExcludedCount),
                Events = ReadEvents(result, sum.EventCount),
                Shortfalls = ReadShortfalls(result, sum.ShortfallCount),
                Groups = ReadGroups(result, sum.GroupCount),
                PrunedForms = ReadPrunedForms(result, sum.PrunedFormCount),
                Json = ReadJson(result),
            };
        }

        internal static List<PrunedForm> ReadPrunedForms(ResultHandle result, UIntPtr count)
        {
            var pruned = new List<PrunedForm>();
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var p = new Native.PrunedForm();
                Native.ctxpack_pruned_form_init(ref p, Native.Size<Native.PrunedForm>());
                Errors.Check(Native.ctxpack_result_report_pruned_form(result, (UIntPtr)i, ref p, out var error), error);
                pruned.Add(new PrunedForm(checked((int)p.Index.ToUInt64()), checked((int)p.Form.ToUInt64()),
                    checked((int)p.DominatedBy.ToUInt64())));
            }
            return pruned;
        }

        internal static Native.ReportSummary ReadSummary(ResultHandle result)
        {
            var sum = new Native.ReportSummary();
            Native.ctxpack_report_summary_init(ref sum, Native.Size<Native.ReportSummary>());
            Errors.Check(Native.ctxpack_result_report_summary(result, ref sum, out var error), error);
            return sum;
        }

        internal static List<IncludedEntry> ReadIncluded(ResultHandle result, UIntPtr count)
        {
            var included = new List<IncludedEntry>();
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var e = new Native.IncludedEntry();
                Native.ctxpack_included_entry_init(ref e, Native.Size<Native.IncludedEntry>());
                Errors.Check(Native.ctxpack_result_report_included(result, (UIntPtr)i, ref e, out var error), error);
                included.Add(new IncludedEntry(e));
            }
            return included;
        }

        internal static List<ExcludedEntry> ReadExcluded(ResultHandle result, UIntPtr count)
        {
            var excluded = new List<ExcludedEntry>();
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var e = new Native.ExcludedEntry();
                Native.ctxpack_excluded_entry_init(ref e, Native.Size<Native.ExcludedEntry>());
                Errors.Check(Native.ctxpack_result_report_excluded(result, (UIntPtr)i, ref e, out var error), error);
                excluded.Add(new ExcludedEntry(e));
            }
            return excluded;
        }

        internal static List<TraceEvent> ReadEvents(ResultHandle result, UIntPtr count)
        {
            var events = new List<TraceEvent>();
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var e = new Native.TraceEvent();
                Native.ctxpack_trace_event_init(ref e, Native.Size<Native.TraceEvent>());
                Errors.Check(Native.ctxpack_result_report_event(result, (UIntPtr)i, ref e, out var error), error);
                events.Add(new TraceEvent(e));
            }
            return events;
        }

        internal static List<Shortfall> ReadShortfalls(ResultHandle result, UIntPtr count)
        {
            var shortfalls = new List<Shortfall>();
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var s = new Native.Shortfall();
                Native.ctxpack_shortfall_init(ref s, Native.Size<Native.Shortfall>());
                Errors.Check(Native.ctxpack_result_report_shortfall(result, (UIntPtr)i, ref s, out var error), error);
                shortfalls.Add(new Shortfall(s));
            }
            return shortfalls;
        }

        internal static List<GroupEntry> ReadGroups(ResultHandle result, UIntPtr count)
        {
            var groups = new List<GroupEntry>();
            for (ulong i = 0; i < count.ToUInt64(); i++)
            {
                var g = new Native.GroupEntry();
                Native.ctxpack_group_entry_init(ref g, Native.Size<Native.GroupEntry>());
                Errors.Check(Native.ctxpack_result_report_group(result, (UIntPtr)i, ref g, out var error), error);
                groups.Add(new GroupEntry(g));
            }
            return groups;
        }

        internal static string ReadJson(ResultHandle result)
        {
            Errors.Check(Native.ctxpack_result_report_json(result, out var json));
            return Native.ToManaged(json);
        }
    }

    /// <summary>An item in the final window.</summary>
    public sealed class IncludedEntry
    {
        internal IncludedEntry(Native.IncludedEntry e)
        {
            Index = checked((int)e.Index.ToUInt64());
            Score = e.Score;
            Reason = (InclusionReason)e.Reason;
            Form = checked((int)e.Form.ToUInt64());
            FullTokens = e.FullTokens;
            ChosenTokens = e.ChosenTokens;
            AvailableTokens = e.AvailableTokens;
            Cause = (DowngradeCause)e.Cause;
        }
        public int Index { get; }
        public double Score { get; }
        public InclusionReason Reason { get; }
        /// <summary>The form placed: 0 in full, f &gt;= 1 the item's Variants[f - 1].</summary>
        public int Form { get; }
        /// <summary>Downgraded: the item's own tokens.</summary>
        public long FullTokens { get; }
        /// <summary>Downgraded: the placed form's tokens.</summary>
        public long ChosenTokens { get; }
        /// <summary>Downgraded: the tokens left unused when the form was chosen.</summary>
        public long AvailableTokens { get; }
        /// <summary>Downgraded: why the full form is not in the window.</summary>
        public DowngradeCause Cause { get; }
    }

    /// <summary>A variant no selection could need: another form of the item has no more
    /// tokens and at least its quality.</summary>
    public sealed class PrunedForm
    {
        internal PrunedForm(int index, int form, int dominatedBy) { Index = index; Form = form; DominatedBy = dominatedBy; }
        /// <summary>The item's position in the input.</summary>
        public int Index { get; }
        /// <summary>The pruned form (&gt;= 1).</summary>
        public int Form { get; }
        /// <summary>The form that makes it unnecessary.</summary>
        public int DominatedBy { get; }
    }

    /// <summary>An item left out, with its reason and the reason's fields (fields of other
    /// reasons are zero or empty).</summary>
    public sealed class ExcludedEntry
    {
        internal ExcludedEntry(Native.ExcludedEntry e)
        {
            Index = checked((int)e.Index.ToUInt64());
            Score = e.Score;
            Reason = (ExclusionReason)e.Reason;
            Name = Native.ToManaged(e.Name);
            ItemTokens = e.ItemTokens;
            AvailableTokens = e.AvailableTokens;
            ReasonScore = e.ReasonScore;
            Threshold = e.Threshold;
            DeduplicatedAgainst = Native.ToManaged(e.DeduplicatedAgainst);
            Kind = Native.ToManaged(e.Kind);
            Cap = e.Cap;
            Actual = e.Actual;
            DisplacedByKind = Native.ToManaged(e.DisplacedByKind);
            Tokens = e.Tokens;
            DisplacedBy = Native.ToManaged(e.DisplacedBy);
            FilterName = Native.ToManaged(e.FilterName);
            CountCap = e.CountCap;
            Count = e.Count;
            Group = Native.ToManaged(e.Group);
            MemberIndex = checked((int)e.MemberIndex.ToUInt64());
            MemberContent = Native.ToManaged(e.MemberContent);
            MemberReason = Native.ToManaged(e.MemberReason);
        }

        public int Index { get; }
        /// <summary>The score when excluded (0 for negative-token items).</summary>
        public double Score { get; }
        public ExclusionReason Reason { get; }
        /// <summary>The wire name of the reason ("BudgetExceeded", ...).</summary>
        public string Name { get; }
        /// <summary>BudgetExceeded.</summary>
        public long ItemTokens { get; }
        /// <summary>BudgetExceeded.</summary>
        public long AvailableTokens { get; }
        /// <summary>ScoredTooLow.</summary>
        public double ReasonScore { get; }
        /// <summary>ScoredTooLow.</summary>
        public double Threshold { get; }
        /// <summary>Deduplicated.</summary>
        public string DeduplicatedAgainst { get; }
        /// <summary>QuotaCapExceeded, CountCapExceeded, CountRequireCandidatesExhausted.</summary>
        public string Kind { get; }
        /// <summary>QuotaCapExceeded.</summary>
        public long Cap { get; }
        /// <summary>QuotaCapExceeded.</summary>
        public long Actual { get; }
        /// <summary>QuotaRequireDisplaced.</summary>
        public string DisplacedByKind { get; }
        /// <summary>NegativeTokens.</summary>
        public long Tokens { get; }
        /// <summary>PinnedOverride: content of the first pinned item.</summary>
        public string DisplacedBy { get; }
        /// <summary>Filtered.</summary>
        public string FilterName { get; }
        /// <summary>CountCapExceeded.</summary>
        public ulong CountCap { get; }
        /// <summary>CountCapExceeded.</summary>
        public ulong Count { get; }
        /// <summary>GroupExcluded: the group key.</summary>
        public string Group { get; }
        /// <summary>GroupExcluded: the member whose exclusion took the group out.</summary>
        public int MemberIndex { get; }
        /// <summary>GroupExcluded: that member's content.</summary>
        public string MemberContent { get; }
        /// <summary>GroupExcluded: that member's reason (wire name).</summary>
        public string MemberReason { get; }
    }

    /// <summary>One group of a traced run's input (docs/groups.md).</summary>
    public sealed class GroupEntry
    {
        internal GroupEntry(Native.GroupEntry g)
        {
            Key = Native.ToManaged(g.Key);
            Members = Slicer.Positions(g.Members, g.MemberCount);
            Tokens = g.Tokens;
            Value = g.HasValue != 0 ? g.Value : (double?)null;
            Decision = (GroupDecision)g.Decision;
            Stage = (PipelineStage)g.Stage;
            MemberIndex = checked((int)g.MemberIndex.ToUInt64());
            PinnedBy = g.HasPinnedBy != 0 ? checked((int)g.PinnedBy.ToUInt64()) : (int?)null;
            PartialSelection = g.PartialSelection != 0;
        }

        public string Key { get; }
        /// <summary>The members' positions in the input, in input order.</summary>
        public IReadOnlyList<int> Members { get; }
        /// <summary>The members' tokens added.</summary>
        public long Tokens { get; }
        /// <summary>The group's value; null for a pinned group and one excluded at Classify.</summary>
        public double? Value { get; }
        public GroupDecision Decision { get; }
        /// <summary>Excluded: the stage that excluded the group.</summary>
        public PipelineStage Stage { get; }
        /// <summary>Excluded: the member whose exclusion took the group out.</summary>
        public int MemberIndex { get; }
        /// <summary>The first pinned member, when it pinned the whole group.</summary>
        public int? PinnedBy { get; }
        /// <summary>A slicer returned only some of the members.</summary>
        public bool PartialSelection { get; }
    }

    /// <summary>A stage event, or (with TraceDetail.Item) an item event with an ItemIndex.</summary>
    public sealed class TraceEvent
    {
        internal TraceEvent(Native.TraceEvent e)
        {
            Stage = (PipelineStage)e.Stage;
            DurationMs = e.DurationMs;
            ItemCount = checked((int)e.ItemCount.ToUInt64());
            Message = e.HasMessage != 0 ? Native.ToManaged(e.Message) : null;
            ItemIndex = e.HasItemIndex != 0 ? checked((int)e.ItemIndex.ToUInt64()) : (int?)null;
        }

        public PipelineStage Stage { get; }
        /// <summary>Wall-clock milliseconds (0 for item events).</summary>
        public double DurationMs { get; }
        public int ItemCount { get; }
        public string Message { get; }
        public int? ItemIndex { get; }
    }

    /// <summary>A count requirement a count-quota slicer could not meet.</summary>
    public sealed class Shortfall
    {
        public Shortfall(string kind, ulong requiredCount, ulong satisfiedCount)
        {
            Kind = kind; RequiredCount = requiredCount; SatisfiedCount = satisfiedCount;
        }

        internal Shortfall(Native.Shortfall s) : this(Native.ToManaged(s.Kind), s.RequiredCount, s.SatisfiedCount) { }

        public string Kind { get; }
        public ulong RequiredCount { get; }
        public ulong SatisfiedCount { get; }

        public override bool Equals(object obj) =>
            obj is Shortfall o && o.Kind == Kind && o.RequiredCount == RequiredCount && o.SatisfiedCount == SatisfiedCount;

        public override int GetHashCode() => (Kind ?? "").GetHashCode() ^ RequiredCount.GetHashCode() ^ SatisfiedCount.GetHashCode();

        public override string ToString() => $"{Kind}: {SatisfiedCount}/{RequiredCount}";
    }

    /// <summary>The library's version.</summary>
    public static class Library
    {
        /// <summary>The version of the loaded library ("MAJOR.MINOR.PATCH").</summary>
        public static string Version => Marshal.PtrToStringAnsi(Native.ctxpack_version());

        /// <summary>The version of the loaded library as MAJOR * 10000 + MINOR * 100 + PATCH
        /// (the header's CTXPACK_VERSION_NUMBER for the same version).</summary>
        public static uint VersionNumber => Native.ctxpack_version_number();
    }
}
