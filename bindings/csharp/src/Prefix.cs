using System;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.InteropServices;
using System.Threading;

namespace Ctxpack
{
    /// <summary>What a prefix run does with the previous turn's window (docs/prefix-cache.md).</summary>
    public enum PrefixMode { Hold = 0, Measure = 1 }

    /// <summary>How a prefix run's turn went.</summary>
    public enum TurnOutcome { Measured = 0, Held = 1, Anchored = 2, Reanchored = 3 }

    /// <summary>Why the new window stops matching the previous one.</summary>
    public enum DifferenceReason { Removed = 0, Edited = 1, Reordered = 2, Inserted = 3, Budget = 4, GroupChanged = 5 }

    /// <summary>A prefix state: what a turn placed, for the next turn. Immutable; store it with
    /// ToBytes (or ToJson) and read it back with FromBytes (or FromJson), which throw
    /// Status.InvalidState for anything but a valid state of a version this library reads.</summary>
    public sealed class PrefixState : IDisposable
    {
        internal readonly PrefixStateHandle Handle;

        internal PrefixState(PrefixStateHandle handle) { Handle = handle; }

        /// <summary>Reads the binary form.</summary>
        public static PrefixState FromBytes(byte[] bytes)
        {
            Arg.NotNull(bytes, nameof(bytes));
            Errors.Check(Native.ctxpack_prefix_state_from_bytes(bytes, (UIntPtr)bytes.Length, out var h, out var e), e);
            return new PrefixState(h);
        }

        /// <summary>Reads the JSON form.</summary>
        public static PrefixState FromJson(string json)
        {
            using (var arena = new NativeArena())
            {
                var s = arena.Str(Arg.NotNull(json, nameof(json)));
                Errors.Check(Native.ctxpack_prefix_state_from_json(s, out var h, out var e), e);
                return new PrefixState(h);
            }
        }

        /// <summary>The binary form.</summary>
        public byte[] ToBytes()
        {
            Errors.Check(Native.ctxpack_prefix_state_to_bytes(Handle, null, UIntPtr.Zero, out var len));
            var buffer = new byte[checked((int)len.ToUInt64())];
            Errors.Check(Native.ctxpack_prefix_state_to_bytes(Handle, buffer, (UIntPtr)buffer.Length, out len));
            return buffer;
        }

        /// <summary>The JSON form.</summary>
        public string ToJson()
        {
            Errors.Check(Native.ctxpack_prefix_state_json(Handle, out var json, out var e), e);
            using (json)
            {
                Errors.Check(Native.ctxpack_string_value(json, out var value));
                return Native.ToManaged(value);
            }
        }

        /// <summary>The turn number (1 for the first turn of a chain).</summary>
        public ulong Turn => Info().Item1;
        /// <summary>Items of the state's window.</summary>
        public int Entries => Info().Item2;
        /// <summary>Their tokens.</summary>
        public long Tokens => Info().Item3;

        Tuple<ulong, int, long> Info()
        {
            Errors.Check(Native.ctxpack_prefix_state_info(Handle, out var turn, out var entries, out var tokens));
            return Tuple.Create(turn, checked((int)entries.ToUInt64()), tokens);
        }

        public void Dispose() => Handle.Dispose();
    }

    /// <summary>Options of a prefix run; the defaults are Hold, no key, no caching rule and the
    /// default thresholds.</summary>
    public sealed class PrefixOptions
    {
        public PrefixMode Mode { get; set; } = PrefixMode.Hold;
        /// <summary>Names the conversation (any bytes; null or empty for none).</summary>
        [AllowNull, MaybeNull] public byte[] Conversation { get; set; }
        /// <summary>"" or "none", "openai", "anthropic", "anthropic:MIN", "vllm", "blocks:N".</summary>
        [AllowNull, MaybeNull] public string CacheRule { get; set; }
        /// <summary>Hold: the largest share of a fresh selection's value a turn may give up
        /// (null: 0.05).</summary>
        public double? MaxValueLoss { get; set; }
        /// <summary>Hold: the share of the target an anchor selects to at least (null: 0.8).</summary>
        public double? LowWatermark { get; set; }
    }

    /// <summary>Where and why the new window stops matching the previous one.</summary>
    public sealed class Difference
    {
        public int Index { get; internal set; }
        public DifferenceReason Reason { get; internal set; }
        /// <summary>The input position of the new window's item there; null when it ends there.</summary>
        public int? Item { get; internal set; }
        public long PreviousPosition { get; internal set; }
    }

    /// <summary>The reuse report of a prefix run (docs/prefix-cache.md §4).</summary>
    public sealed class Reuse
    {
        public PrefixMode Mode { get; internal set; }
        public TurnOutcome Outcome { get; internal set; }
        public ulong Turn { get; internal set; }
        public ulong TurnsSinceAnchor { get; internal set; }
        public int PreviousEntries { get; internal set; }
        public long PreviousTokens { get; internal set; }
        public int WindowEntries { get; internal set; }
        public long WindowTokens { get; internal set; }
        public int KeptEntries { get; internal set; }
        public long KeptTokens { get; internal set; }
        public long CachedTokens { get; internal set; }
        public long AnchorTarget { get; internal set; }
        public double FreshValue { get; internal set; }
        public double Value { get; internal set; }
        public double ValueGivenUp { get; internal set; }
        /// <summary>Null when the previous window is a prefix of the new one (or there was none).</summary>
        [MaybeNull] public Difference Difference { get; internal set; }
        /// <summary>The report's JSON form.</summary>
        public string Json { get; internal set; }
    }

    /// <summary>The outcome of Pipeline.RunPrefix; dispose it (or its State) when done.</summary>
    public sealed class PrefixRun : IDisposable
    {
        public RunResult Result { get; internal set; }
        public Reuse Reuse { get; internal set; }
        /// <summary>This turn's state, for the next turn.</summary>
        public PrefixState State { get; internal set; }

        public void Dispose() => State.Dispose();
    }

    public sealed partial class Pipeline
    {
        /// <summary>Runs the pipeline with the previous turn's state (null on a first turn), in
        /// Measure or Hold mode (options null: Hold with the defaults). Thread-safe.</summary>
        public PrefixRun RunPrefix(IReadOnlyList<ContextItem> items, Budget budget, [AllowNull] PrefixOptions options = null,
            [AllowNull] PrefixState previous = null, TraceDetail trace = TraceDetail.None)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return RunPrefix(list, budget, options, previous, trace);
            }
        }

        /// <summary>RunPrefix over an item list; result indices are positions in it.</summary>
        public PrefixRun RunPrefix(ItemList items, Budget budget, [AllowNull] PrefixOptions options = null,
            [AllowNull] PrefixState previous = null, TraceDetail trace = TraceDetail.None) =>
            RunPrefix(items, budget, CancellationToken.None, options, previous, trace);

        /// <summary>RunPrefix that stops when <paramref name="cancellation"/> is cancelled, as
        /// the cancellable <c>Run</c> does (OperationCanceledException for that token); a
        /// cancelled run returns no state, so <paramref name="previous"/> stays the
        /// conversation's state.</summary>
        public PrefixRun RunPrefix(IReadOnlyList<ContextItem> items, Budget budget, CancellationToken cancellation,
            [AllowNull] PrefixOptions options = null, [AllowNull] PrefixState previous = null, TraceDetail trace = TraceDetail.None)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return RunPrefix(list, budget, cancellation, options, previous, trace);
            }
        }

        /// <summary>The cancellable RunPrefix over an item list.</summary>
        public PrefixRun RunPrefix(ItemList items, Budget budget, CancellationToken cancellation, [AllowNull] PrefixOptions options = null,
            [AllowNull] PrefixState previous = null, TraceDetail trace = TraceDetail.None)
        {
            Arg.NotNull(items, nameof(items));
            Arg.NotNull(budget, nameof(budget));
            options = options ?? new PrefixOptions();
            var run = new Native.RunOptions();
            Native.ctxpack_run_options_init(ref run, Native.Size<Native.RunOptions>());
            run.TraceDetail = (int)trace;
            using (var arena = new NativeArena())
            {
                var o = NativeOptions(options, arena);
                Func<IntPtr, PrefixRun> call = prev =>
                {
                    var status = Native.ctxpack_pipeline_run_prefix(Handle, items.Handle, budget.Handle, ref run, ref o, prev,
                        out var result, out var state, out var error);
                    Errors.Check(status, error);
                    try
                    {
                        using (result)
                        {
                            return new PrefixRun
                            {
                                Result = RunResult.Read(result),
                                Reuse = ReadReuse(
                                    (ref Native.PrefixReuse r, out IntPtr e) => Native.ctxpack_result_prefix_reuse(result, ref r, out e),
                                    (out StringHandle j, out IntPtr e) => Native.ctxpack_result_prefix_reuse_json(result, out j, out e)),
                                State = new PrefixState(state),
                            };
                        }
                    }
                    catch
                    {
                        state.Dispose();
                        throw;
                    }
                };
                return WithCancellation(cancellation, token =>
                {
                    run.Cancel = token;
                    // The previous state stays referenced for the call (a null one is a first turn).
                    return previous == null ? call(IntPtr.Zero) : previous.Handle.WithPointer(call);
                });
            }
        }

        internal delegate int FillReuse(ref Native.PrefixReuse reuse, out IntPtr error);
        internal delegate int ReuseJson(out StringHandle json, out IntPtr error);

        /// <summary>The C form of options; its strings live in arena.</summary>
        internal static Native.PrefixOptions NativeOptions(PrefixOptions options, NativeArena arena)
        {
            var o = new Native.PrefixOptions();
            Native.ctxpack_prefix_options_init(ref o, Native.Size<Native.PrefixOptions>());
            o.Mode = (int)options.Mode;
            var key = options.Conversation ?? new byte[0];
            if (key.Length > 0)
            {
                var p = arena.Alloc(key.Length);
                Marshal.Copy(key, 0, p, key.Length);
                o.Conversation = new Native.Str { Ptr = p, Len = (UIntPtr)key.Length };
            }
            o.CacheRule = arena.Str(options.CacheRule);
            if (options.MaxValueLoss.HasValue || options.LowWatermark.HasValue)
            {
                o.CustomThresholds = 1;
                o.MaxValueLoss = options.MaxValueLoss ?? 0.05;
                o.LowWatermark = options.LowWatermark ?? 0.8;
            }
            return o;
        }

        /// <summary>A reuse report read with fill (the struct) and json (its JSON form), for
        /// prefix runs and chat trims alike.</summary>
        internal static Reuse ReadReuse(FillReuse fill, ReuseJson jsonOf)
        {
            var r = new Native.PrefixReuse();
            Native.ctxpack_prefix_reuse_init(ref r, Native.Size<Native.PrefixReuse>());
            Errors.Check(fill(ref r, out var error), error);
            var reuse = new Reuse
            {
                Mode = (PrefixMode)r.Mode, Outcome = (TurnOutcome)r.Outcome, Turn = r.Turn,
                TurnsSinceAnchor = r.TurnsSinceAnchor, PreviousEntries = checked((int)r.PreviousEntries.ToUInt64()),
                PreviousTokens = r.PreviousTokens, WindowEntries = checked((int)r.WindowEntries.ToUInt64()),
                WindowTokens = r.WindowTokens, KeptEntries = checked((int)r.KeptEntries.ToUInt64()),
                KeptTokens = r.KeptTokens, CachedTokens = r.CachedTokens, AnchorTarget = r.AnchorTarget,
                FreshValue = r.FreshValue, Value = r.Value, ValueGivenUp = r.ValueGivenUp,
            };
            if (r.HasDifference != 0)
            {
                reuse.Difference = new Difference
                {
                    Index = checked((int)r.DifferenceIndex.ToUInt64()),
                    Reason = (DifferenceReason)r.DifferenceReason,
                    Item = r.DifferenceItem.ToUInt64() == (UIntPtr.Size == 8 ? ulong.MaxValue : uint.MaxValue) ? (int?)null : checked((int)r.DifferenceItem.ToUInt64()),
                    PreviousPosition = r.DifferencePreviousPosition,
                };
            }
            Errors.Check(jsonOf(out var json, out error), error);
            using (json)
            {
                Errors.Check(Native.ctxpack_string_value(json, out var value));
                reuse.Json = Native.ToManaged(value);
            }
            return reuse;
        }
    }
}
