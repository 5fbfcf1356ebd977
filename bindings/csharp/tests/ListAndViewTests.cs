using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack.Tests
{
    /// The ItemList overloads of every call that takes items, and the item views custom
    /// components receive.
    static class ListAndViewTests
    {
        /// Varied items: kinds, tags, metadata, priorities, timestamps, a pinned item, a group.
        static ContextItem[] Items(int n)
        {
            var kinds = new[] { "Message", "Document", "ToolOutput", "Memory" };
            var items = Enumerable.Range(0, n).Select(i =>
            {
                var it = Util.Day($"list item {i}", 5 + i * 7 % 31, i % 40);
                it.Kind = kinds[i % kinds.Length];
                it.Priority = i % 9;
                it.Tags = new List<string> { $"t{i % 3}", "shared" };
                if (i % 5 == 0) it.Metadata = new Dictionary<string, string> { ["cupel:trust"] = "0.7", ["k"] = i.ToString() };
                return it;
            }).ToArray();
            items[3].Pinned = true;
            items[10].Group = items[11].Group = "call-1";
            return items;
        }

        static string Show<T>(IEnumerable<T> xs) => string.Join(",", xs);

        static string Show(SliceResult r) => $"{Show(r.Selected)}/{Show(r.CapExcluded)}/{Show(r.Shortfalls)}";

        static string Show(Sensitivity s) =>
            string.Join("#", s.Results.Select(GcStressTests.Digest)) + "#" + Show(s.Labels) + "#" +
            Show(s.Swings.Select(w => $"{w.Index}:{Show(w.Statuses)}"));

        [Test]
        public static void ListOverloadsAnswerAsTheItemOverloads()
        {
            var items = Items(60);
            var scores = Enumerable.Range(0, items.Length).Select(i => (i % 13) / 12.0).ToArray();
            using (var list = new ItemList(items))
            using (var budget = new Budget(400, 300))
            using (var chat = Pipeline.FromPreset("chat"))
            using (var rag = Pipeline.FromPreset("rag"))
            using (var scorer = Scorer.Scaled(Scorer.Priority()))
            using (var slicer = Slicer.CountQuota(Slicer.Greedy(), Scarcity.Degrade, new CountQuotaEntry("Memory", 2, 5)))
            using (var placer = Placer.UShaped())
            {
                var dry = chat.DryRun(list, budget);
                Assert.Equal(GcStressTests.Digest(chat.DryRun(items, budget)), GcStressTests.Digest(dry), "DryRun");
                Assert.True(dry.Indices.Count > 0 && dry.Indices.Count < items.Length,
                    $"the dry run selected {dry.Indices.Count} of {items.Length}: the comparison is not telling");

                // Run over items is the one-shot run over descriptors: it answers as the list run.
                foreach (var trace in new[] { TraceDetail.None, TraceDetail.Item })
                {
                    Assert.Equal(GcStressTests.Digest(chat.Run(list, budget, trace)), GcStressTests.Digest(chat.Run(items, budget, trace)),
                        $"Run at {trace}");
                }
                Assert.Equal(0, chat.Run(new ContextItem[0], budget).Indices.Count, "a run over no items");

                var marginal = chat.MarginalItems(list, budget, 60);
                Assert.Sequence(chat.MarginalItems(items, budget, 60), marginal, "MarginalItems");
                Assert.True(marginal.Length > 0, "MarginalItems found nothing: the comparison is not telling");

                Assert.Equal(chat.MinBudgetFor(items, 7, 5000), chat.MinBudgetFor(list, 7, 5000), "MinBudgetFor");

                var variants = new[] { new SensitivityVariant("chat", chat), new SensitivityVariant("rag", rag) };
                Assert.Equal(Show(Sensitivity.Compare(items, budget, variants)), Show(Sensitivity.Compare(list, budget, variants)),
                    "Sensitivity.Compare");

                var scored = scorer.Score(list);
                Assert.Equal(items.Length, scored.Length, "scores over the list");
                Assert.Sequence(scorer.Score(items), scored, "Score");

                Assert.Equal(Show(slicer.Slice(items, scores, budget)), Show(slicer.Slice(list, scores, budget)), "Slice");
                Assert.Equal(Show(slicer.Slice(items, scores, budget, GroupValue.Max)),
                    Show(slicer.Slice(list, scores, budget, GroupValue.Max)), "Slice, GroupValue.Max");

                Assert.Sequence(placer.Place(items, scores), placer.Place(list, scores), "Place");
                Assert.Sequence(placer.Place(items, scores, GroupValue.Mean), placer.Place(list, scores, GroupValue.Mean),
                    "Place, GroupValue.Mean");
            }
        }

        [Test]
        public static void ListOverloadsRejectNullAndDisposedLists()
        {
            using (var chat = Pipeline.FromPreset("chat"))
            using (var budget = new Budget(100, 80))
            using (var scorer = Scorer.Priority())
            {
                Assert.Throws<ArgumentNullException>(() => chat.DryRun((ItemList)null, budget), "DryRun(null)");
                Assert.Throws<ArgumentNullException>(() => scorer.Score((ItemList)null), "Score(null)");
                Assert.Throws<ArgumentOutOfRangeException>(() => chat.MinBudgetFor(new ItemList(Items(20)), -1, 10), "a negative target");
                var list = new ItemList(Items(20));
                list.Dispose();
                Assert.Throws<ObjectDisposedException>(() => chat.DryRun(list, budget), "DryRun over a disposed list");
                Assert.Throws<ObjectDisposedException>(() => chat.MarginalItems(list, budget, 5), "MarginalItems over a disposed list");
                Assert.Throws<ObjectDisposedException>(() => scorer.Score(list), "Score over a disposed list");
            }
        }

        sealed class Seen
        {
            public string Content, Kind, Source, Trust, Metadata, Tags, TagsByIndex, Copy;
            public int ContentBytes;
            public long Tokens;
            public long? Priority, TimestampNs, Original;
            public double? Hint;
            public bool Pinned, IsDocument, HasX, HasZ, HasTrust, MetadataSorted;

            public override string ToString() =>
                $"{Content}|{ContentBytes}|{Tokens}|{Kind}|{Source}|{Priority}|{Tags}|{TagsByIndex}|{HasX}|{HasZ}|{Metadata}|" +
                $"{MetadataSorted}|{Trust}|{HasTrust}|{TimestampNs}|{Hint}|{Original}|{Pinned}|{IsDocument}|{Copy}";
        }

        static string Describe(ContextItem it) =>
            $"{it.Content}/{it.Tokens}/{it.Kind}/{it.Source}/{it.Priority}/{Show(it.Tags)}/" +
            $"{Show(it.Metadata.OrderBy(kv => kv.Key, StringComparer.Ordinal).Select(kv => kv.Key + "=" + kv.Value))}/" +
            $"{it.TimestampUnixNanos}/{it.FutureRelevanceHint}/{it.Pinned}/{it.OriginalTokens}";

        [Test]
        public static void ViewsReadWhatTheItemsHold()
        {
            var full = new ContextItem("fül漢🙂", 7)
            {
                Kind = "Document", Source = "rag", Priority = -3, Tags = new List<string> { "x", "ÿ", "x" },
                Metadata = new Dictionary<string, string> { ["cupel:trust"] = "0.5", ["b"] = "é", ["a"] = "" },
                TimestampUnixNanos = 1709209800123456789, FutureRelevanceHint = 1.5, OriginalTokens = 70, Pinned = true,
            };
            var bare = new ContextItem("bare", 1);
            var seen = new List<Seen>();
            using (var scorer = Scorer.CustomViews(views =>
                   {
                       foreach (var v in views)
                       {
                           var keys = Enumerable.Range(0, v.MetadataCount).Select(v.MetadataAt).ToList();
                           var s = new Seen
                           {
                               Content = v.Content, ContentBytes = v.ContentByteCount, Tokens = v.Tokens, Kind = v.Kind,
                               Source = v.Source, Priority = v.Priority, Tags = Show(v.Tags),
                               TagsByIndex = Show(Enumerable.Range(0, v.TagCount).Select(v.Tag)), HasX = v.HasTag("x"),
                               HasZ = v.HasTag("z") || v.HasTag("ÿ ") || v.HasTag("\u00ff\u00ff"),
                               Metadata = Show(keys.Select(kv => kv.Key + "=" + kv.Value)),
                               MetadataSorted = keys.Select(kv => kv.Key).SequenceEqual(keys.Select(kv => kv.Key).OrderBy(k => k, StringComparer.Ordinal)),
                               HasTrust = v.TryGetMetadata("cupel:trust", out var trust), Trust = trust,
                               TimestampNs = v.TimestampUnixNanos, Hint = v.FutureRelevanceHint, Original = v.OriginalTokens,
                               Pinned = v.Pinned, IsDocument = v.IsKind("Document") && !v.IsKind("document") && !v.IsKind("Documents"),
                               Copy = Describe(v.ToContextItem()),
                           };
                           Assert.True(v.HasTag("ÿ") == (v.Content == full.Content), "HasTag of a non-ASCII tag");
                           Assert.Equal(v.TimestampUnixNanos.HasValue, v.Timestamp.HasValue, "Timestamp");
                           seen.Add(s);
                       }
                       return views.Select(_ => 0.5).ToArray();
                   }))
            {
                // Scorer.Score scores every item, the pinned one included.
                scorer.Score(new[] { bare, full });
            }
            var bareCopy = new ContextItem("bare", 1) { Kind = "Message", Source = "Chat" };
            var want = new[]
            {
                new Seen { Content = "bare", ContentBytes = 4, Tokens = 1, Kind = "Message", Source = "Chat", Tags = "", TagsByIndex = "",
                           Metadata = "", MetadataSorted = true, Copy = Describe(bareCopy) },
                new Seen { Content = full.Content, ContentBytes = System.Text.Encoding.UTF8.GetByteCount(full.Content), Tokens = 7,
                           Kind = "Document", Source = "rag", Priority = -3, Tags = "x,ÿ,x", TagsByIndex = "x,ÿ,x", HasX = true,
                           Metadata = "a=,b=é,cupel:trust=0.5", MetadataSorted = true, HasTrust = true, Trust = "0.5",
                           TimestampNs = full.TimestampUnixNanos, Hint = 1.5, Original = 70, Pinned = true, IsDocument = true,
                           Copy = Describe(full) },
            };
            Assert.Sequence(want.Select(w => w.ToString()), seen.Select(s => s.ToString()), "what the views read");
        }

        [Test]
        public static void ViewsKeptPastTheirCallbackThrow()
        {
            ItemViews kept = null;
            var keptItem = default(ItemView);
            using (var scorer = Scorer.CustomViews(views =>
                   {
                       kept = views;
                       keptItem = views[0];
                       return views.Select(_ => 1.0).ToArray();
                   }))
            using (var pipeline = Util.Pipeline(scorer))
            using (var budget = new Budget(10, 10))
            {
                pipeline.Run(new[] { Util.Day("a", 1, 0), Util.Day("b", 1, 1) }, budget);
            }
            Assert.Equal(2, kept.Count, "items the callback saw");
            Assert.Throws<ObjectDisposedException>(() => { var _ = kept[1]; }, "ItemViews[i]");
            Assert.Throws<ObjectDisposedException>(() => kept.ToContextItems(), "ItemViews.ToContextItems");
            Assert.Throws<ObjectDisposedException>(() => { var _ = keptItem.Content; }, "ItemView.Content");
            Assert.Throws<ObjectDisposedException>(() => { var _ = keptItem.Tokens; }, "ItemView.Tokens");
            Assert.Throws<ObjectDisposedException>(() => keptItem.HasTag("x"), "ItemView.HasTag");
            Assert.Throws<InvalidOperationException>(() => { var _ = default(ItemView).Tokens; }, "a default ItemView");
        }

        [Test]
        public static void AViewIndexOutOfRangeFailsTheRun()
        {
            using (var scorer = Scorer.CustomViews(views => new[] { views[views.Count].Tokens * 1.0 }))
            using (var pipeline = Util.Pipeline(scorer))
            using (var budget = new Budget(10, 10))
            {
                var e = Assert.Throws<CtxpackException>(() => pipeline.Run(new[] { Util.Day("a", 1, 0) }, budget));
                Assert.Equal(Status.Callback, e.Status, "status");
                Assert.True(e.Message.Contains("ArgumentOutOfRangeException"), e.Message);
            }
        }

        [Test]
        public static void ViewSlicerAndPlacerMatchTheCopyingOnes()
        {
            var items = Items(30);
            Func<Func<int, long>, int, long, IEnumerable<int>> slice = (tokens, n, target) =>
            {
                var chosen = new List<int>();
                long used = 0;
                for (int i = 0; i < n; i++)
                {
                    if (used + tokens(i) <= target) { chosen.Add(i); used += tokens(i); }
                }
                return chosen;
            };
            Func<int, IReadOnlyList<int>> reverse = n => Enumerable.Range(0, n).Reverse().ToArray();
            using (var budget = new Budget(200, 150))
            using (var recency = Scorer.Recency())
            using (var copySlicer = Slicer.Custom((its, _, target, __) => slice(i => its[i].Tokens, its.Count, target)))
            using (var copyPlacer = Placer.Custom((its, _) => reverse(its.Count)))
            using (var viewSlicer = Slicer.CustomViews((vs, _, target, __) => slice(i => vs[i].Tokens, vs.Count, target)))
            using (var viewPlacer = Placer.CustomViews((vs, _) => reverse(vs.Count)))
            using (var copying = new Pipeline(recency, copySlicer, copyPlacer))
            using (var viewing = new Pipeline(recency, viewSlicer, viewPlacer))
            {
                var want = copying.Run(items, budget);
                var got = viewing.Run(items, budget);
                Assert.Sequence(want.Indices, got.Indices, "indices");
                Assert.Sequence(want.Scores, got.Scores, "scores");
                Assert.True(got.Indices.Count > 0 && got.Indices.Count < items.Length,
                    $"{got.Indices.Count} of {items.Length} selected: the comparison is not telling");
            }
        }

        [Test]
        public static void AnItemWithoutCollectionsAllocatesNone()
        {
            var fields = new[] { "tags", "metadata", "variants" }
                .Select(n => typeof(ContextItem).GetField(n, System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance))
                .ToArray();
            Assert.True(fields.All(f => f != null), "ContextItem's collection fields");
            var item = new ContextItem("plain", 3);
            using (var list = new ItemList(new[] { item }))
            {
                Assert.Equal(1, list.Count, "items pushed");
            }
            Assert.True(fields.All(f => f.GetValue(item) == null), "pushing an item created empty collections");
            // Reading a property still gives a usable empty collection.
            item.Tags.Add("t");
            item.Metadata["k"] = "v";
            Assert.Equal(1, item.Tags.Count, "Tags after Add");
            Assert.Equal(0, item.Variants.Count, "Variants read");
            using (var scorer = Scorer.CustomViews(views => views.Select(v => v.HasTag("t") && v.TryGetMetadata("k", out var _) ? 1.0 : 0.0).ToArray()))
            {
                var scores = scorer.Score(new[] { item });
                Assert.Sequence(new[] { 1.0 }, scores, "the added tag and metadata reached the library");
            }
        }
    }
}
