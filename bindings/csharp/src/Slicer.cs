using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    /// <summary>What a count-quota slicer does when a required kind has too few items.</summary>
    public enum Scarcity { Degrade = 0, Throw = 1 }

    /// <summary>A percentage quota for one kind (QuotaSlice): require and cap in percent of the
    /// target.</summary>
    public struct QuotaEntry
    {
        public QuotaEntry(string kind, double require, double cap) { Kind = kind; Require = require; Cap = cap; }
        public string Kind { get; }
        public double Require { get; }
        public double Cap { get; }
    }

    /// <summary>A count quota for one kind (count-quota slicers).</summary>
    public struct CountQuotaEntry
    {
        /// <summary>Counts are non-negative (size_t in the ABI): a negative one throws
        /// ArgumentOutOfRangeException.</summary>
        public CountQuotaEntry(string kind, int requireCount, int capCount)
        {
            if (requireCount < 0) throw new ArgumentOutOfRangeException(nameof(requireCount), "a count cannot be negative");
            if (capCount < 0) throw new ArgumentOutOfRangeException(nameof(capCount), "a count cannot be negative");
            Kind = kind;
            RequireCount = requireCount;
            CapCount = capCount;
        }
        public string Kind { get; }
        public int RequireCount { get; }
        public int CapCount { get; }
    }

    /// <summary>What a slicer returned when run alone (Slicer.Slice).</summary>
    public sealed class SliceResult
    {
        internal SliceResult(int[] selected, int[] capExcluded, IReadOnlyList<Shortfall> shortfalls)
        {
            Selected = selected; CapExcluded = capExcluded; Shortfalls = shortfalls;
        }

        /// <summary>Positions in the input, in the slicer's output order.</summary>
        public IReadOnlyList<int> Selected { get; }

        /// <summary>Positions a count-quota slicer removed because their kind reached its cap.</summary>
        public IReadOnlyList<int> CapExcluded { get; }

        /// <summary>Count requirements that could not be met.</summary>
        public IReadOnlyList<Shortfall> Shortfalls { get; }
    }

    /// <summary>Selects what fits into the budget. Immutable and reference-counted like
    /// Scorer.</summary>
    public sealed class Slicer : IDisposable
    {
        /// <summary>The default bucket size of the knapsack slicers.</summary>
        public const long DefaultBucketSize = 100;

        internal readonly SlicerHandle Handle;

        Slicer(SlicerHandle handle) { Handle = handle; }

        static Slicer Make(Component.Constructor<SlicerHandle> construct) => new Slicer(Component.Create(construct));

        public void Dispose() => Handle.Dispose();

        /// <summary>Fills the budget by value density (GreedySlice).</summary>
        public static Slicer Greedy() => Make(Native.ctxpack_slicer_new_greedy);

        /// <summary>Optimal 0/1 selection over a capacity discretised by bucketSize (KnapsackSlice);
        /// a run whose table would exceed tableLimitBytes (0 = 256 MiB) fails with
        /// Status.TableTooLarge.</summary>
        public static Slicer Knapsack(long bucketSize = DefaultBucketSize, ulong tableLimitBytes = 0) =>
            Make((out SlicerHandle h, out IntPtr e) => Native.ctxpack_slicer_new_knapsack(bucketSize, tableLimitBytes, out h, out e));

        /// <summary>Per-kind percentage budgets around inner (QuotaSlice).</summary>
        public static unsafe Slicer Quota(Slicer inner, params QuotaEntry[] entries)
        {
            using (var arena = new NativeArena())
            {
                var array = (Native.QuotaEntry*)arena.Array<Native.QuotaEntry>(entries.Length);
                for (int i = 0; i < entries.Length; i++)
                {
                    array[i] = new Native.QuotaEntry { Kind = arena.Str(entries[i].Kind), Require = entries[i].Require, Cap = entries[i].Cap };
                }
                return Make((out SlicerHandle h, out IntPtr e) =>
                    Native.ctxpack_slicer_new_quota((IntPtr)array, (UIntPtr)entries.Length, Arg.NotNull(inner, nameof(inner)).Handle, out h, out e));
            }
        }

        /// <summary>Commits RequireCount items per kind, lets inner (not a knapsack) fill the
        /// rest, and enforces the caps (CountQuotaSlice).</summary>
        public static Slicer CountQuota(Slicer inner, Scarcity scarcity, params CountQuotaEntry[] entries)
        {
            using (var arena = new NativeArena())
            {
                var array = CountEntries(arena, entries);
                return Make((out SlicerHandle h, out IntPtr e) => Native.ctxpack_slicer_new_count_quota(
                    array, (UIntPtr)entries.Length, Arg.NotNull(inner, nameof(inner)).Handle, (int)scarcity, out h, out e));
            }
        }

        /// <summary>Count quotas with a knapsack for the rest (CountConstrainedKnapsackSlice).</summary>
        public static Slicer CountConstrainedKnapsack(Scarcity scarcity, CountQuotaEntry[] entries,
            long bucketSize = DefaultBucketSize, ulong tableLimitBytes = 0)
        {
            using (var arena = new NativeArena())
            {
                var array = CountEntries(arena, entries);
                return Make((out SlicerHandle h, out IntPtr e) => Native.ctxpack_slicer_new_count_constrained_knapsack(
                    array, (UIntPtr)entries.Length, bucketSize, tableLimitBytes, (int)scarcity, out h, out e));
            }
        }

        static unsafe IntPtr CountEntries(NativeArena arena, CountQuotaEntry[] entries)
        {
            var array = (Native.CountQuotaEntry*)arena.Array<Native.CountQuotaEntry>(entries.Length);
            for (int i = 0; i < entries.Length; i++)
            {
                array[i] = new Native.CountQuotaEntry
                {
                    Kind = arena.Str(entries[i].Kind),
                    RequireCount = (UIntPtr)(uint)entries[i].RequireCount,
                    CapCount = (UIntPtr)(uint)entries[i].CapCount,
                };
            }
            return (IntPtr)array;
        }

        /// <summary>A slicer written in C# over items copied into ContextItems; the delegate is
        /// kept alive until the library drops its last reference to the slicer.
        /// <see cref="CustomViews"/> reads only the members it uses.</summary>
        public static Slicer Custom(SliceFunction slice)
        {
            Arg.NotNull(slice, nameof(slice));
            return CustomViews((items, scores, target, max) => slice(items.ToContextItems(), scores, target, max));
        }

        /// <summary>A slicer written in C# over views of the items (valid only during the
        /// call).</summary>
        public static Slicer CustomViews(SliceViewFunction slice) =>
            new Slicer(Callbacks.Create<SlicerHandle>(slice, userData => (out SlicerHandle h, out IntPtr e) =>
                Native.ctxpack_slicer_new_custom(Callbacks.SliceThunk, userData, Callbacks.DestroyThunk, out h, out e)));

        /// <summary>Runs the slicer alone over items with the given scores (one per item)
        /// against budget exactly as given (no pinned-item or reserve adjustment).</summary>
        /// Items with a Group are selected whole or not at all, a group being worth its
        /// members' scores combined by groupValue. The items are copied into a temporary
        /// list; the ItemList overload takes a list.
        public SliceResult Slice(IReadOnlyList<ContextItem> items, double[] scores, Budget budget,
            GroupValue groupValue = GroupValue.Sum)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return Slice(list, scores, budget, groupValue);
            }
        }

        /// <summary>Slice over an item list (one score per item; positions in the list).</summary>
        public SliceResult Slice(ItemList items, double[] scores, Budget budget, GroupValue groupValue = GroupValue.Sum)
        {
            Errors.Check(Native.ctxpack_slicer_slice_with_group_value(Handle, Arg.NotNull(items, nameof(items)).Handle, scores,
                (UIntPtr)Arg.NotNull(scores, nameof(scores)).Length, Arg.NotNull(budget, nameof(budget)).Handle,
                (int)groupValue, out var result, out var error), error);
            using (result)
            {
                Errors.Check(Native.ctxpack_slice_result_selected(result, out var sel, out var nsel));
                Errors.Check(Native.ctxpack_slice_result_cap_excluded(result, out var cap, out var ncap));
                Errors.Check(Native.ctxpack_slice_result_shortfall_count(result, out var nshort));
                var shortfalls = new List<Shortfall>();
                for (ulong i = 0; i < nshort.ToUInt64(); i++)
                {
                    var s = new Native.Shortfall();
                    Native.ctxpack_shortfall_init(ref s, Native.Size<Native.Shortfall>());
                    Errors.Check(Native.ctxpack_slice_result_shortfall(result, (UIntPtr)i, ref s, out var shortfallError),
                        shortfallError);
                    shortfalls.Add(new Shortfall(s));
                }
                return new SliceResult(Positions(sel, nsel), Positions(cap, ncap), shortfalls);
            }
        }

        /// Copies an array of size_t positions owned by a result.
        internal static unsafe int[] Positions(IntPtr ptr, UIntPtr len)
        {
            var src = (UIntPtr*)ptr;
            var out_ = new int[checked((int)len.ToUInt64())];
            for (int i = 0; i < out_.Length; i++) out_[i] = checked((int)src[i].ToUInt64());
            return out_;
        }
    }

    /// <summary>Orders the selected items. Immutable and reference-counted like Scorer.</summary>
    public sealed class Placer : IDisposable
    {
        internal readonly PlacerHandle Handle;

        Placer(PlacerHandle handle) { Handle = handle; }

        public void Dispose() => Handle.Dispose();

        /// <summary>Timestamped items oldest first, then the others; ties by input position.</summary>
        public static Placer Chronological() => new Placer(Component.Create<PlacerHandle>(Native.ctxpack_placer_new_chronological));

        /// <summary>The highest scores at both edges, the lowest in the middle.</summary>
        public static Placer UShaped() => new Placer(Component.Create<PlacerHandle>(Native.ctxpack_placer_new_u_shaped));

        /// <summary>A placer written in C# over items copied into ContextItems; the delegate is
        /// kept alive until the library drops its last reference to the placer.
        /// <see cref="CustomViews"/> reads only the members it uses.</summary>
        public static Placer Custom(PlaceFunction place)
        {
            Arg.NotNull(place, nameof(place));
            return CustomViews((items, scores) => place(items.ToContextItems(), scores));
        }

        /// <summary>A placer written in C# over views of the items (valid only during the
        /// call).</summary>
        public static Placer CustomViews(PlaceViewFunction place) =>
            new Placer(Callbacks.Create<PlacerHandle>(place, userData => (out PlacerHandle h, out IntPtr e) =>
                Native.ctxpack_placer_new_custom(Callbacks.PlaceThunk, userData, Callbacks.DestroyThunk, out h, out e)));

        /// <summary>Runs the placer alone over items with the given scores (one per item) and
        /// returns the placement order as positions in items. The members of a group end up
        /// next to each other, in input order. The items are copied into a temporary list;
        /// the ItemList overload takes a list.</summary>
        public int[] Place(IReadOnlyList<ContextItem> items, double[] scores, GroupValue groupValue = GroupValue.Sum)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return Place(list, scores, groupValue);
            }
        }

        /// <summary>Place over an item list (one score per item; positions in the list).</summary>
        public int[] Place(ItemList items, double[] scores, GroupValue groupValue = GroupValue.Sum)
        {
            var order = new UIntPtr[Arg.NotNull(scores, nameof(scores)).Length];
            Errors.Check(Native.ctxpack_placer_place_with_group_value(Handle, Arg.NotNull(items, nameof(items)).Handle, scores,
                (UIntPtr)scores.Length, (int)groupValue, order, out var error), error);
            return order.Select(p => checked((int)p.ToUInt64())).ToArray();
        }
    }
}
