using System;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Threading;

namespace Ctxpack
{
    /// <summary>The outcome of a traced run that keeps the library's result and reads the
    /// report only when asked (<see cref="Pipeline.RunTraced"/>): the selection is copied at
    /// once, as for an untraced run, while each report part is read on its first use and
    /// kept. Dispose frees the library's result (its finalizer does otherwise); a part not
    /// read before Dispose then throws <see cref="ObjectDisposedException"/>. Thread-safe,
    /// Dispose included.</summary>
    public sealed class TracedRunResult : IDisposable
    {
        readonly ResultHandle result;
        readonly object gate = new object();
        Native.ReportSummary? summary;
        IReadOnlyList<IncludedEntry> included;
        IReadOnlyList<ExcludedEntry> excluded;
        IReadOnlyList<TraceEvent> events;
        IReadOnlyList<Shortfall> shortfalls;
        IReadOnlyList<GroupEntry> groups;
        string json;
        ReportAnalytics analytics;

        internal TracedRunResult(ResultHandle result)
        {
            var selection = RunResult.ReadSelection(result);
            this.result = result;
            Indices = selection.Indices;
            Scores = selection.Scores;
            Reasons = selection.Reasons;
            Overflow = selection.Overflow;
        }

        /// <summary>The selected items as positions in the input, in placed order.</summary>
        public IReadOnlyList<int> Indices { get; }

        /// <summary>Scores parallel to Indices (1.0 for pinned items).</summary>
        public IReadOnlyList<double> Scores { get; }

        /// <summary>Inclusion reasons parallel to Indices.</summary>
        public IReadOnlyList<InclusionReason> Reasons { get; }

        /// <summary>The overflow event of a Proceed run over target, else null.</summary>
        [MaybeNull] public OverflowEvent Overflow { get; }

        /// <summary>Number of input items.</summary>
        public int TotalCandidates => checked((int)Summary.TotalCandidates.ToUInt64());

        /// <summary>Sum of every input item's tokens (the nearest 64-bit value when
        /// TotalTokensSaturated).</summary>
        public long TotalTokensConsidered => Summary.TotalTokensConsidered;

        /// <summary>Whether the exact total did not fit in 64 bits.</summary>
        public bool TotalTokensSaturated => Summary.TotalTokensSaturated != 0;

        /// <summary>Items in the final window, placed order.</summary>
        public IReadOnlyList<IncludedEntry> Included => Once(ref included, r => SelectionReport.ReadIncluded(r, Summary.IncludedCount));

        /// <summary>Items left out, score descending (ties in recording order).</summary>
        public IReadOnlyList<ExcludedEntry> Excluded => Once(ref excluded, r => SelectionReport.ReadExcluded(r, Summary.ExcludedCount));

        /// <summary>Trace events, in recording order.</summary>
        public IReadOnlyList<TraceEvent> Events => Once(ref events, r => SelectionReport.ReadEvents(r, Summary.EventCount));

        /// <summary>Count requirements a count-quota slicer could not meet.</summary>
        public IReadOnlyList<Shortfall> Shortfalls => Once(ref shortfalls, r => SelectionReport.ReadShortfalls(r, Summary.ShortfallCount));

        /// <summary>The item groups of the input (none when no item has a group).</summary>
        public IReadOnlyList<GroupEntry> Groups => Once(ref groups, r => SelectionReport.ReadGroups(r, Summary.GroupCount));

        /// <summary>The report in the JSON wire form of spec 06 §10 (built by the library on
        /// first use).</summary>
        public string Json => Once(ref json, SelectionReport.ReadJson);

        /// <summary>The report helpers of spec 07 §7 for this run.</summary>
        public ReportAnalytics Analytics => Once(ref analytics, ReportAnalytics.Read);

        Native.ReportSummary Summary
        {
            get
            {
                lock (gate)
                {
                    if (summary == null) summary = SelectionReport.ReadSummary(Live());
                    return summary.Value;
                }
            }
        }

        T Once<T>(ref T field, Func<ResultHandle, T> read) where T : class
        {
            lock (gate)
            {
                if (field == null) field = read(Live());
                return field;
            }
        }

        ResultHandle Live()
        {
            if (result.IsClosed) throw new ObjectDisposedException(nameof(TracedRunResult));
            return result;
        }

        /// <summary>Frees the library's result; parts already read stay available.</summary>
        public void Dispose()
        {
            lock (gate) result.Dispose();
        }
    }
}
