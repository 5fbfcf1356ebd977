using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Ctxpack
{
    /// <summary>What a run does when the selection exceeds the target.</summary>
    public enum OverflowStrategy { Throw = 0, Truncate = 1, Proceed = 2 }

    /// <summary>How a group's value is computed from its members' scores (docs/groups.md).</summary>
    public enum GroupValue { Sum = 0, Max = 1, Mean = 2 }

    /// <summary>How much a run records for its report.</summary>
    public enum TraceDetail { None = 0, Stage = 1, Item = 2 }

    /// <summary>A configured scorer, slicer and placer. Immutable; may be run from many threads
    /// at once (custom components must then be thread-safe).</summary>
    public sealed partial class Pipeline : IDisposable
    {
        internal readonly PipelineHandle Handle;

        /// <summary>Builds a pipeline; it keeps its own references to the components, which
        /// may be disposed afterwards. Deduplication removes byte-identical contents;
        /// groupValue sets how a group's value is computed (it matters only when items have a
        /// Group); pinnedFirst places the pinned items first, in input order, before
        /// everything the placer orders.</summary>
        public Pipeline(Scorer scorer, Slicer slicer, Placer placer, bool deduplication = true,
            OverflowStrategy overflow = OverflowStrategy.Throw, GroupValue groupValue = GroupValue.Sum,
            bool pinnedFirst = false, bool useVariants = true)
        {
            var options = new Native.PipelineOptions();
            Native.ctxpack_pipeline_options_init(ref options, Native.Size<Native.PipelineOptions>());
            options.Deduplication = deduplication ? (byte)1 : (byte)0;
            options.OverflowStrategy = (int)overflow;
            options.GroupValue = (int)groupValue;
            options.PinnedFirst = pinnedFirst ? (byte)1 : (byte)0;
            options.NoVariants = useVariants ? (byte)0 : (byte)1;
            Handle = Component.Create((out PipelineHandle h, out IntPtr e) =>
                Native.ctxpack_pipeline_new(Arg.NotNull(scorer, nameof(scorer)).Handle, Arg.NotNull(slicer, nameof(slicer)).Handle,
                    Arg.NotNull(placer, nameof(placer)).Handle, ref options, out h, out e));
        }

        Pipeline(PipelineHandle handle) { Handle = handle; }

        public void Dispose() => Handle.Dispose();

        /// <summary>The preset names, in the order of spec 07 §2 ("Chat", "CodeReview", "Rag",
        /// "DocumentQa", "ToolUse", "LongRunning", "Debugging").</summary>
        public static IReadOnlyList<string> Presets
        {
            get
            {
                var names = new List<string>();
                for (ulong i = 0; i < Native.ctxpack_preset_count().ToUInt64(); i++)
                {
                    Errors.Check(Native.ctxpack_preset_name((UIntPtr)i, out var name));
                    names.Add(Native.ToManaged(name));
                }
                return names;
            }
        }

        /// <summary>The pipeline of a preset; the name matches in any ASCII case, with or without
        /// "-", "_" or a space between words. An unknown name is Status.InvalidArgument.</summary>
        public static Pipeline FromPreset(string name)
        {
            using (var arena = new NativeArena())
            {
                var s = arena.Str(Arg.NotNull(name, nameof(name)));
                return new Pipeline(Component.Create((out PipelineHandle h, out IntPtr e) => Native.ctxpack_pipeline_new_preset(s, out h, out e)));
            }
        }

        /// <summary>A pipeline from a policy in its JSON form (docs/policy-json.md). A structural
        /// problem is Status.InvalidPolicy with the JSON path of the bad field; a value a
        /// component rejects keeps that component's status.</summary>
        public static Pipeline FromPolicyJson(string json)
        {
            using (var arena = new NativeArena())
            {
                var s = arena.Str(Arg.NotNull(json, nameof(json)));
                return new Pipeline(Component.Create((out PipelineHandle h, out IntPtr e) => Native.ctxpack_pipeline_new_policy_json(s, out h, out e)));
            }
        }

        /// <summary>The pipeline's policy as JSON (compact, or indented by two spaces). A custom
        /// component is Status.InvalidPolicy.</summary>
        public string ToPolicyJson(bool pretty = false)
        {
            Errors.Check(Native.ctxpack_pipeline_policy_json(Handle, pretty, out var json, out var error), error);
            using (json)
            {
                Errors.Check(Native.ctxpack_string_value(json, out var value));
                return Native.ToManaged(value);
            }
        }

        /// <summary>Runs the pipeline over items within budget in one call (the library's
        /// one-shot run: the items are copied once and no list is kept; see the ItemList
        /// overload to share one copy between runs). Thread-safe.</summary>
        public RunResult Run(IReadOnlyList<ContextItem> items, Budget budget, TraceDetail trace = TraceDetail.None) =>
            Run(items, budget, CancellationToken.None, trace);

        /// <summary>Frees the memory the pipeline keeps for its one-shot runs (<c>Run</c> over
        /// items; the library's <c>ctxpack_pipeline_release_memory</c>). After a one-shot run of
        /// at most 131 072 items the pipeline keeps that run's buffers for the next one, about
        /// 170 bytes per item of the largest kept run for an agent pipeline (numbers only,
        /// never the items' contents); this frees them, and the next one-shot run allocates
        /// them again. Results and Runners are unaffected. Thread-safe, during runs too: a run
        /// in progress keeps what it holds until it returns. A disposed pipeline throws
        /// <see cref="ObjectDisposedException"/>.</summary>
        public void ReleaseMemory() => Errors.Check(Native.ctxpack_pipeline_release_memory(Handle));

        /// <summary>Runs the pipeline over an item list; result indices are positions in it.
        /// Thread-safe; the run works on the list as it was when it started.</summary>
        public RunResult Run(ItemList items, Budget budget, TraceDetail trace = TraceDetail.None) =>
            Run(items, budget, CancellationToken.None, trace);

        /// <summary>Run that stops when <paramref name="cancellation"/> is cancelled: the library
        /// checks before each stage and inside its long loops (every row of a knapsack, every
        /// call of a per-item custom scorer), and a cancelled run throws
        /// <see cref="OperationCanceledException"/> for that token, whose InnerException is the
        /// library's <see cref="CtxpackException"/> (Status.Cancelled). A token that is never
        /// cancelled changes nothing.</summary>
        public RunResult Run(IReadOnlyList<ContextItem> items, Budget budget, CancellationToken cancellation,
            TraceDetail trace = TraceDetail.None)
        {
            Arg.NotNull(items, nameof(items));
            Arg.NotNull(budget, nameof(budget));
            var options = RunOptionsOf(trace);
            using (var arena = new NativeArena())
            {
                var descs = items.Count == 0 ? IntPtr.Zero : ContextItem.Descriptors(arena, items);
                var handle = WithCancellation(cancellation, token =>
                {
                    options.Cancel = token;
                    Errors.Check(Native.ctxpack_pipeline_run_descs(Handle, descs, (UIntPtr)items.Count, budget.Handle,
                        ref options, out var result, out var error), error);
                    return result;
                });
                using (handle) return RunResult.Read(handle);
            }
        }

        /// <summary>Run over an item list that stops when <paramref name="cancellation"/> is
        /// cancelled (see the overload taking items).</summary>
        public RunResult Run(ItemList items, Budget budget, CancellationToken cancellation,
            TraceDetail trace = TraceDetail.None)
        {
            using (var result = RunRaw(items, budget, cancellation, trace))
            {
                return RunResult.Read(result);
            }
        }

        /// <summary>A traced run (at <paramref name="trace"/>; None is taken as Stage) whose
        /// report is read only when asked: see <see cref="TracedRunResult"/>, which the caller
        /// disposes. Cancellable as <c>Run</c>.</summary>
        public TracedRunResult RunTraced(ItemList items, Budget budget, TraceDetail trace = TraceDetail.Item,
            CancellationToken cancellation = default(CancellationToken))
        {
            var result = RunRaw(items, budget, cancellation, trace == TraceDetail.None ? TraceDetail.Stage : trace);
            try
            {
                return new TracedRunResult(result);
            }
            catch
            {
                result.Dispose();
                throw;
            }
        }

        /// Runs and returns the library's result (the caller disposes it).
        internal ResultHandle RunRaw(ItemList items, Budget budget, CancellationToken cancellation, TraceDetail trace)
        {
            Arg.NotNull(items, nameof(items));
            Arg.NotNull(budget, nameof(budget));
            var options = RunOptionsOf(trace);
            return WithCancellation(cancellation, token =>
            {
                options.Cancel = token;
                Errors.Check(Native.ctxpack_pipeline_run(Handle, items.Handle, budget.Handle, ref options,
                    out var result, out var error), error);
                return result;
            });
        }

        /// The run options at `trace`. No overflow callback: the event is in
        /// RunResult.Overflow.
        internal static Native.RunOptions RunOptionsOf(TraceDetail trace)
        {
            var options = new Native.RunOptions();
            Native.ctxpack_run_options_init(ref options, Native.Size<Native.RunOptions>());
            options.TraceDetail = (int)trace;
            return options;
        }

        /// Runs `call` with the pointer of a library cancel token that is cancelled when
        /// `cancellation` is (IntPtr.Zero, no token, when it can never be), and turns the
        /// library's Status.Cancelled into OperationCanceledException for that token.
        internal static T WithCancellation<T>(CancellationToken cancellation, Func<IntPtr, T> call)
        {
            if (!cancellation.CanBeCanceled) return call(IntPtr.Zero);
            Errors.Check(Native.ctxpack_cancel_token_new(out var token, out var tokenError), tokenError);
            using (token)
            // Cancels the library's token when the caller's is cancelled (at once if it
            // already is); disposing the registration waits for a callback in progress.
            using (cancellation.Register(() => Native.ctxpack_cancel_token_cancel(token)))
            {
                return token.WithPointer(ptr =>
                {
                    try
                    {
                        return call(ptr);
                    }
                    catch (CtxpackException e) when (e.Status == Status.Cancelled && cancellation.IsCancellationRequested)
                    {
                        throw new OperationCanceledException(e.Message, e, cancellation);
                    }
                });
            }
        }

        /// <summary>A run traced at item detail (spec 07 §4): the result always has a report.
        /// The items are copied into a temporary list; the ItemList overload takes a list.</summary>
        public RunResult DryRun(IReadOnlyList<ContextItem> items, Budget budget)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return DryRun(list, budget);
            }
        }

        /// <summary>DryRun over an item list; result indices are positions in it.</summary>
        public RunResult DryRun(ItemList items, Budget budget)
        {
            Errors.Check(Native.ctxpack_pipeline_dry_run(Handle, Arg.NotNull(items, nameof(items)).Handle,
                Arg.NotNull(budget, nameof(budget)).Handle, out var result, out var error), error);
            using (result) return RunResult.Read(result);
        }

        /// <summary>The items included under budget that drop out when it shrinks by slack tokens
        /// (spec 07 §5.1), in placed order. A percentage quota slicer is Status.PipelineConfig.
        /// The items are copied into a temporary list; the ItemList overload takes a list.</summary>
        public int[] MarginalItems(IReadOnlyList<ContextItem> items, Budget budget, long slack)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return MarginalItems(list, budget, slack);
            }
        }

        /// <summary>MarginalItems over an item list (positions in it).</summary>
        public int[] MarginalItems(ItemList items, Budget budget, long slack)
        {
            var positions = new UIntPtr[Arg.NotNull(items, nameof(items)).Count];
            Errors.Check(Native.ctxpack_pipeline_marginal_items(Handle, items.Handle, Arg.NotNull(budget, nameof(budget)).Handle,
                slack, positions, (UIntPtr)positions.Length, out var count, out var error), error);
            return positions.Take(checked((int)count.ToUInt64())).Select(p => checked((int)p.ToUInt64())).ToArray();
        }

        /// <summary>The smallest budget (max = target, no reserve) in [tokens of items[target],
        /// ceiling] that includes items[target] (spec 07 §5.2), or null when even the ceiling
        /// does not. Quota slicers are Status.PipelineConfig; a target outside items or a
        /// ceiling below its tokens is Status.InvalidArgument. The items are copied into a
        /// temporary list; the ItemList overload takes a list.</summary>
        public long? MinBudgetFor(IReadOnlyList<ContextItem> items, int target, long ceiling)
        {
            if (target < 0) throw new ArgumentOutOfRangeException(nameof(target));
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return MinBudgetFor(list, target, ceiling);
            }
        }

        /// <summary>MinBudgetFor over an item list; target is a position in it.</summary>
        public long? MinBudgetFor(ItemList items, int target, long ceiling)
        {
            if (target < 0) throw new ArgumentOutOfRangeException(nameof(target));
            Errors.Check(Native.ctxpack_pipeline_min_budget_for(Handle, Arg.NotNull(items, nameof(items)).Handle, (UIntPtr)target,
                ceiling, out bool found, out long budget, out var error), error);
            return found ? budget : (long?)null;
        }
    }
}
