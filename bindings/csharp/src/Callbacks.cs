using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Ctxpack
{
    /// <summary>A custom scorer: returns one finite score per item. Throwing fails the run with
    /// Status.Callback and the exception's message. A pipeline may run on several threads at
    /// once and then calls the function concurrently: it must be thread-safe.</summary>
    public delegate IReadOnlyList<double> ScoreFunction(IReadOnlyList<ContextItem> items);

    /// <summary>A custom slicer: given the candidates sorted by score (descending), their
    /// scores and the effective budget, returns the chosen positions (indices into items,
    /// each at most once). Same failure and threading rules as ScoreFunction.</summary>
    public delegate IEnumerable<int> SliceFunction(IReadOnlyList<ContextItem> items, IReadOnlyList<double> scores,
        long targetTokens, long maxTokens);

    /// <summary>A custom placer: returns a permutation of 0..items.Count-1 (element k is the
    /// position placed k-th). Same failure and threading rules as ScoreFunction.</summary>
    public delegate IReadOnlyList<int> PlaceFunction(IReadOnlyList<ContextItem> items, IReadOnlyList<double> scores);

    /// <summary>ScoreFunction over views of the items (<see cref="ItemViews"/>, valid only during
    /// the call): members are read from the library's memory when asked, so a run copies
    /// nothing the function does not use.</summary>
    public delegate IReadOnlyList<double> ScoreViewFunction(ItemViews items);

    /// <summary>SliceFunction over views of the items (valid only during the call).</summary>
    public delegate IEnumerable<int> SliceViewFunction(ItemViews items, IReadOnlyList<double> scores,
        long targetTokens, long maxTokens);

    /// <summary>PlaceFunction over views of the items (valid only during the call).</summary>
    public delegate IReadOnlyList<int> PlaceViewFunction(ItemViews items, IReadOnlyList<double> scores);

    /// The native side of custom components.
    ///
    /// Lifetime: the user's delegate is held by a GCHandle whose IntPtr is the component's
    /// user_data. The library owns it once the constructor succeeds and calls Destroy
    /// exactly once, when its last reference to the component goes (possibly when a
    /// pipeline is disposed, possibly on another thread); Destroy frees the GCHandle. The
    /// thunks passed as function pointers are static fields, so they are never collected.
    ///
    /// Exceptions never cross into native code: Invoke catches everything and reports it
    /// as the callback's failure message.
    internal static unsafe class Callbacks
    {
        internal static readonly Native.ScoreAllFn ScoreAllThunk = ScoreAll;
        internal static readonly Native.SliceFn SliceThunk = Slice;
        internal static readonly Native.PlaceFn PlaceThunk = Place;
        internal static readonly Native.DestroyFn DestroyThunk = Destroy;

        static long live;

        /// The number of custom components the library has not destroyed yet.
        internal static long Live => Interlocked.Read(ref live);

        /// Creates a component whose user_data holds `function`. A failed constructor does
        /// not take user_data, so it is freed here.
        internal static THandle Create<THandle>(object function, Func<IntPtr, Component.Constructor<THandle>> constructor)
            where THandle : CtxpackHandle
        {
            if (function == null) throw new ArgumentNullException(nameof(function));
            var userData = GCHandle.ToIntPtr(GCHandle.Alloc(function));
            Interlocked.Increment(ref live);
            try
            {
                return Component.Create(constructor(userData));
            }
            catch
            {
                Destroy(userData);
                throw;
            }
        }

        static void Destroy(IntPtr userData)
        {
            GCHandle.FromIntPtr(userData).Free();
            Interlocked.Decrement(ref live);
        }

        static T Target<T>(IntPtr userData) => (T)GCHandle.FromIntPtr(userData).Target;

        /// Runs `body` over the views of one callback and ends their lifetime when it returns,
        /// so that views kept by the user throw instead of reading freed memory.
        static T WithViews<T>(IntPtr items, UIntPtr count, Func<ItemViews, T> body)
        {
            var views = new ItemViews(items, count);
            try
            {
                return body(views);
            }
            finally
            {
                views.End();
            }
        }

        static int ScoreAll(IntPtr userData, IntPtr items, UIntPtr count, IntPtr outScores, IntPtr error) =>
            Invoke(error, () =>
            {
                var scores = WithViews(items, count, Target<ScoreViewFunction>(userData).Invoke);
                int n = checked((int)count.ToUInt64());
                if (scores == null || scores.Count != n)
                {
                    throw new InvalidOperationException($"custom scorer returned {scores?.Count ?? 0} scores for {n} items");
                }
                var dst = (double*)outScores;
                for (int i = 0; i < n; i++) dst[i] = scores[i];
            });

        static int Slice(IntPtr userData, IntPtr items, IntPtr scores, UIntPtr count, long targetTokens, long maxTokens,
            IntPtr outPositions, IntPtr outCount, IntPtr error) =>
            Invoke(error, () =>
            {
                var slice = Target<SliceViewFunction>(userData);
                var positions = WithViews(items, count, views =>
                    slice(views, Doubles(scores, count), targetTokens, maxTokens)?.ToList()) ?? new List<int>();
                StorePositions("slicer", positions, outPositions, count);
                *(UIntPtr*)outCount = (UIntPtr)positions.Count;
            });

        static int Place(IntPtr userData, IntPtr items, IntPtr scores, UIntPtr count, IntPtr outOrder, IntPtr error) =>
            Invoke(error, () =>
            {
                var place = Target<PlaceViewFunction>(userData);
                var order = WithViews(items, count, views => place(views, Doubles(scores, count)));
                if (order == null || (ulong)order.Count != count.ToUInt64())
                {
                    throw new InvalidOperationException($"custom placer returned {order?.Count ?? 0} positions for {count} items");
                }
                StorePositions("placer", order, outOrder, count);
            });

        static double[] Doubles(IntPtr p, UIntPtr count)
        {
            var values = new double[checked((int)count.ToUInt64())];
            if (values.Length > 0) Marshal.Copy(p, values, 0, values.Length);
            return values;
        }

        static void StorePositions(string what, IReadOnlyList<int> positions, IntPtr dst, UIntPtr capacity)
        {
            if ((ulong)positions.Count > capacity.ToUInt64())
            {
                throw new InvalidOperationException($"custom {what} returned {positions.Count} positions for {capacity} items");
            }
            var out_ = (UIntPtr*)dst;
            for (int i = 0; i < positions.Count; i++)
            {
                if (positions[i] < 0) throw new InvalidOperationException($"custom {what} returned the negative position {positions[i]}");
                out_[i] = (UIntPtr)positions[i];
            }
        }

        /// Runs one callback body: 0 on success, 1 with a message on any exception.
        static int Invoke(IntPtr error, Action body)
        {
            try
            {
                body();
                return 0;
            }
            catch (Exception e)
            {
                try
                {
                    SetMessage(error, $"{e.GetType().Name}: {e.Message}");
                }
                catch
                {
                    // No message then (out of memory); the run still fails with Status.Callback.
                }
                return 1;
            }
        }

        // The message must stay valid until the callback returns; the library copies it
        // right after, on this thread. So each thread keeps its latest message until its
        // next failure (at most one small allocation per thread).
        [ThreadStatic] static IntPtr keptMessage;

        static void SetMessage(IntPtr error, string message)
        {
            var bytes = Encoding.UTF8.GetBytes(message);
            var p = Marshal.AllocHGlobal(Math.Max(bytes.Length, 1));
            Marshal.Copy(bytes, 0, p, bytes.Length);
            if (keptMessage != IntPtr.Zero) Marshal.FreeHGlobal(keptMessage);
            keptMessage = p;
            ((Native.CallbackError*)error)->Message = new Native.Str { Ptr = p, Len = (UIntPtr)bytes.Length };
        }
    }
}
