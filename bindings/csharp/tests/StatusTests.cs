using System;
using System.Threading;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using System.Text.RegularExpressions;

namespace Ctxpack.Tests
{
    static class StatusTests
    {
        /// InvalidUtf8 -> CTXPACK_INVALID_UTF8
        static string CName(Status s) =>
            "CTXPACK_" + Regex.Replace(s.ToString(), "(?<=[a-z0-9])([A-Z])", "_$1").ToUpperInvariant();

        [Test]
        public static void EnumMatchesTheLibrary()
        {
            foreach (Status s in Enum.GetValues(typeof(Status)))
            {
                Assert.Equal(CName(s), StatusNames.Of(s), $"name of {(int)s}");
            }
            for (int v = -5; v < 1000; v++)
            {
                var name = StatusNames.Of((Status)v);
                Assert.True(name == "CTXPACK_UNKNOWN_STATUS" || Enum.IsDefined(typeof(Status), v),
                    $"the library knows status {v} ({name}); the C# enum does not");
            }
        }

        [Test]
        public static void ExceptionCarriesStatusAndMessage()
        {
            var e = Assert.Fails(Status.InvalidBudget, () => new Budget(10, 20).Dispose());
            Assert.True(e.LibraryMessage.Contains("target_tokens (20) must be <= max_tokens (10)"), e.LibraryMessage);
            Assert.Equal("CTXPACK_INVALID_BUDGET: " + e.LibraryMessage, e.Message, "Message");
        }

        // Raw entry points with IntPtr handles, for the calls the typed API never makes.
        [DllImport("ctxpack", CallingConvention = CallingConvention.Cdecl)] static extern int ctxpack_pipeline_new(IntPtr scorer, IntPtr slicer, IntPtr placer, IntPtr options, out IntPtr pipeline, out IntPtr error);
        [DllImport("ctxpack", CallingConvention = CallingConvention.Cdecl)] static extern int ctxpack_items_len(IntPtr items, out UIntPtr len);
        // Exported only by a library built with the ffi-test-hooks feature (not in the header).
        [DllImport("ctxpack", CallingConvention = CallingConvention.Cdecl)] static extern int ctxpack_test_scorer_new_faulty(int code, out ScorerHandle scorer, out IntPtr error);

        static void Run(IReadOnlyList<ContextItem> items, long max, long target, OverflowStrategy overflow = OverflowStrategy.Throw) =>
            Util.RunRecency(items, max, target, overflow);

        static void RunWith(Scorer scorer)
        {
            using (scorer)
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(10, 10))
            {
                p.Run(new[] { Util.Day("a", 1, 0) }, b);
            }
        }

        static void RunCancelled()
        {
            using (var scorer = Scorer.Recency())
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(10, 10))
            {
                try
                {
                    p.Run(new[] { Util.Day("a", 1, 0) }, b, new CancellationToken(true));
                }
                catch (OperationCanceledException e) when (e.InnerException is CtxpackException inner)
                {
                    throw inner;
                }
            }
        }

        static void RunWith(Slicer slicer, IReadOnlyList<ContextItem> items)
        {
            using (slicer)
            using (var s = Scorer.Recency())
            using (var placer = Placer.Chronological())
            using (var p = new Pipeline(s, slicer, placer))
            using (var b = new Budget(1000, 1000))
            {
                p.Run(items, b);
            }
        }

        static unsafe void PushRaw(Func<NativeArena, IntPtr> descs, int count)
        {
            using (var list = new ItemList())
            using (var arena = new NativeArena())
            {
                Errors.Check(Native.ctxpack_items_push_many(list.Handle, descs(arena), (UIntPtr)count, out var error), error);
            }
        }

        /// Runs an untraced and a traced pipeline at the raw level and reads report entry
        /// `index` of each: NO_REPORT and OUT_OF_RANGE come from here.
        static void ReadReportEntry(TraceDetail trace, ulong index)
        {
            using (var s = Scorer.Recency())
            using (var p = Util.Pipeline(s))
            using (var list = new ItemList(new[] { Util.Day("a", 1, 0) }))
            using (var b = new Budget(10, 10))
            {
                var opts = new Native.RunOptions();
                Native.ctxpack_run_options_init(ref opts, Native.Size<Native.RunOptions>());
                opts.TraceDetail = (int)trace;
                Errors.Check(Native.ctxpack_pipeline_run(p.Handle, list.Handle, b.Handle, ref opts, out var r, out var error), error);
                using (r)
                {
                    var e = new Native.IncludedEntry();
                    Native.ctxpack_included_entry_init(ref e, Native.Size<Native.IncludedEntry>());
                    Errors.Check(Native.ctxpack_result_report_included(r, (UIntPtr)index, ref e, out error), error);
                }
            }
        }

        sealed class Case
        {
            public Case(Status status, Action produce) { Status = status; Produce = produce; }
            public readonly Status Status;
            public readonly Action Produce;
        }

        static readonly Case[] Cases =
        {
            new Case(Status.EmptyContent, () => new ItemList(new[] { new ContextItem("", 1) })),
            new Case(Status.EmptyKind, () => new ItemList(new[] { new ContextItem("a", 1) { Kind = "  " } })),
            new Case(Status.EmptySource, () => new ItemList(new[] { new ContextItem("a", 1) { Source = "\t" } })),
            new Case(Status.InvalidBudget, () => new Budget(10, 20)),
            new Case(Status.PinnedExceedsBudget, () => Run(new[] { new ContextItem("p", 90) { Pinned = true } }, 50, 50)),
            // Pinned tokens above the target but within the window overflow under Throw.
            new Case(Status.Overflow, () => Run(new[] { new ContextItem("p", 80) { Pinned = true } }, 100, 50)),
            new Case(Status.ScorerConfig, () => Scorer.MetadataKey("k", "v", 0)),
            new Case(Status.SlicerConfig, () => Slicer.Knapsack(-1)),
            new Case(Status.PipelineConfig, () =>
            {
                var status = ctxpack_pipeline_new(IntPtr.Zero, IntPtr.Zero, IntPtr.Zero, IntPtr.Zero, out var pipeline, out var error);
                Errors.Check(status, error);
            }),
            new Case(Status.TableTooLarge, () => RunWith(Slicer.Knapsack(1, 1), new[] { Util.Day("a", 10, 0), Util.Day("b", 10, 1) })),
            new Case(Status.CountRequirementUnmet, () =>
            {
                using (var inner = Slicer.Greedy())
                    RunWith(Slicer.CountQuota(inner, Scarcity.Throw, new CountQuotaEntry("Memory", 2, 2)), new[] { Util.Day("a", 10, 0) });
            }),
            new Case(Status.Callback, () => RunWith(Scorer.Custom(items => new[] { double.NaN }))),
            // Pinned tokens summed past int64.
            new Case(Status.TokenOverflow, () => Run(new[] { new ContextItem("a", long.MaxValue) { Pinned = true }, new ContextItem("b", 1) { Pinned = true } },
                long.MaxValue, long.MaxValue, OverflowStrategy.Proceed)),
            new Case(Status.InvalidPolicy, () => Pipeline.FromPolicyJson(@"{""scorers"": [{""type"": ""recency"", ""weight"": -1}]}")),
            new Case(Status.InvalidArgument, () =>
            {
                using (var s = Scorer.Recency()) Util.Pipeline(s, overflow: (OverflowStrategy)7);
            }),
            // No table limit and a budget of 10^12 tokens: a 4 TB DP row is an error, not an abort.
            new Case(Status.OutOfMemory, () =>
            {
                using (var s = Scorer.Reflexive())
                using (var slicer = Slicer.Knapsack(1, ulong.MaxValue))
                using (var placer = Placer.Chronological())
                using (var p = new Pipeline(s, slicer, placer))
                using (var b = new Budget(1000000000000L, 1000000000000L))
                {
                    // (No digit separators: Mono's compiler misreads them.)
                    p.Run(new[]
                    {
                        new ContextItem("a", 600000000000L) { FutureRelevanceHint = 0.9 },
                        new ContextItem("b", 600000000000L) { FutureRelevanceHint = 0.8 },
                    }, b);
                }
            }),
            new Case(Status.NullArgument, () => PushRaw(arena => IntPtr.Zero, 1)),
            new Case(Status.InvalidUtf8, () => PushRaw(arena =>
            {
                var bytes = arena.Alloc(4);
                Marshal.Copy(new byte[] { (byte)'c', (byte)'a', (byte)'f', 0xe9 }, 0, bytes, 4);
                var p = arena.Array<Native.ItemDesc>(1);
                Native.ctxpack_item_desc_init(p, Native.Size<Native.ItemDesc>());
                unsafe
                {
                    var desc = (Native.ItemDesc*)p;
                    desc->Tokens = 1;
                    desc->Content = new Native.Str { Ptr = bytes, Len = (UIntPtr)4 };
                }
                return p;
            }, 1)),
            new Case(Status.WrongHandleType, () =>
            {
                using (var b = new Budget(10, 10))
                    Errors.Check(b.Handle.WithPointer(ptr => ctxpack_items_len(ptr, out var len)));
            }),
            new Case(Status.OutOfRange, () => ReadReportEntry(TraceDetail.Stage, 1 << 20)),
            new Case(Status.NoReport, () => ReadReportEntry(TraceDetail.None, 0)),
            // Test hook: a scorer whose runs panic inside the library.
            new Case(Status.Panic, () => RunWith(FaultyScorer(0))),
            // Test hook: CTXPACK_UNSUPPORTED comes from real calls only in a build without
            // the tokenizer feature.
            new Case(Status.Unsupported, () => RunWith(FaultyScorer((int)Status.Unsupported))),
            // No prefix-state call exists in the binding yet: the hook's scorer fails with it.
            new Case(Status.InvalidState, () => RunWith(FaultyScorer((int)Status.InvalidState))),
            // No chat-request call exists in the binding yet: the hook's scorer fails with it.
            new Case(Status.InvalidRequest, () => RunWith(FaultyScorer(20))),
            // A run whose CancellationToken is cancelled before it starts.
            new Case(Status.Cancelled, () => RunCancelled()),

        };

        static Scorer FaultyScorer(int code)
        {
            try
            {
                return new Scorer(Component.Create((out ScorerHandle h, out IntPtr e) => ctxpack_test_scorer_new_faulty(code, out h, out e)));
            }
            catch (EntryPointNotFoundException)
            {
                throw new SkipException("the library was built without the ffi-test-hooks feature");
            }
        }

        static bool HooksRequired => Environment.GetEnvironmentVariable("CTXPACK_TEST_HOOKS") == "1";

        [Test]
        public static void EveryStatusFromTheLibrary()
        {
            var produced = new HashSet<Status>();
            foreach (var c in Cases)
            {
                var status = c.Status;
                var produce = c.Produce;
                try
                {
                    var e = Assert.Fails(status, produce, status.ToString());
                    var accessor = status == Status.WrongHandleType || status == Status.OutOfRange || status == Status.NoReport;
                    Assert.True(accessor || e.LibraryMessage.Length > 0, $"{status} without a message");
                    Console.WriteLine($"       {e.Message}");
                    produced.Add(status);
                }
                catch (SkipException skip) when (!HooksRequired)
                {
                    Console.WriteLine($"       {status}: skipped ({skip.Message})");
                }
            }
            var missing = Enum.GetValues(typeof(Status)).Cast<Status>().Where(s => s != Status.Ok && !produced.Contains(s)).ToList();
            Assert.True(missing.Count == 0 || !HooksRequired, "never produced: " + string.Join(", ", missing));
        }

        [Test]
        public static void EveryCoreErrorThroughARun()
        {
            for (int code = 1; code <= 15; code++)
            {
                var e = Assert.Fails((Status)code, () => RunWith(FaultyScorer(code)), $"faulty scorer {code}");
                Assert.True(e.LibraryMessage.Length > 0, $"status {code} without a message");
            }
        }
    }
}
