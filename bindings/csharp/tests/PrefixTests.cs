using System;
using System.Collections.Generic;
using System.Linq;

namespace Ctxpack.Tests
{
    static class PrefixTests
    {
        /// n messages of 20 tokens, one a day; `edit` appended to message 0.
        static List<ContextItem> Messages(int n, string edit = "") =>
            Enumerable.Range(0, n).Select(i => Util.Day("message " + i + (i == 0 ? edit : ""), 20, i)).ToList();

        [Test]
        public static void HoldKeepsTheWindowAndAppends()
        {
            using (var scorer = Scorer.Recency())
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(100, 100))
            using (var t1 = p.RunPrefix(Messages(4), b))
            {
                Assert.Equal(TurnOutcome.Anchored, t1.Reuse.Outcome, "turn 1 outcome");
                Assert.Equal(1UL, t1.State.Turn, "turn");
                // Four messages of 20 tokens fit the low watermark (80 % of 100).
                Assert.Equal(4, t1.State.Entries, "entries");
                Assert.Equal(80L, t1.State.Tokens, "tokens");
                using (var t2 = p.RunPrefix(Messages(5), b, null, t1.State))
                {
                    Assert.Equal(TurnOutcome.Held, t2.Reuse.Outcome, "turn 2 outcome");
                    Assert.Equal(4, t2.Reuse.KeptEntries, "kept entries");
                    Assert.Equal(80L, t2.Reuse.KeptTokens, "kept tokens");
                    Assert.True(t2.Reuse.Difference == null, "no difference");
                    Assert.Equal(string.Join(",", t1.Result.Indices.Concat(new[] { 4 })), string.Join(",", t2.Result.Indices), "indices");
                    Assert.True(t2.Reuse.Json.Contains("\"outcome\":\"held\""), t2.Reuse.Json);
                }
            }
        }

        [Test]
        public static void MeasureFindsAnEditAndAppliesTheCacheRule()
        {
            var measure = new PrefixOptions { Mode = PrefixMode.Measure, CacheRule = "blocks:32" };
            using (var scorer = Scorer.Recency())
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(100, 60))
            using (var t1 = p.RunPrefix(Messages(6), b, measure))
            using (var t2 = p.RunPrefix(Messages(6), b, measure, t1.State))
            {
                // The three newest messages (60 tokens) again: one whole 32-token block.
                Assert.Equal(3, t2.Reuse.KeptEntries, "kept");
                Assert.Equal(32L, t2.Reuse.CachedTokens, "cached");
            }
            using (var scorer = Scorer.Recency())
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(1000, 1000))
            using (var t1 = p.RunPrefix(Messages(4), b, measure))
            using (var t2 = p.RunPrefix(Messages(4, "!"), b, measure, t1.State))
            {
                var d = t2.Reuse.Difference;
                Assert.True(d != null, "a difference");
                Assert.Equal(DifferenceReason.Edited, d.Reason, "reason");
                Assert.Equal(0, d.Index, "index");
                Assert.Equal((int?)0, d.Item, "item");
            }
        }

        [Test]
        public static void StateFormsRoundTripAndErrors()
        {
            var one = new PrefixOptions { Conversation = new byte[] { 1, 0, 2 } };
            using (var scorer = Scorer.Recency())
            using (var p = Util.Pipeline(scorer))
            using (var b = new Budget(100, 100))
            using (var run = p.RunPrefix(Messages(3), b, one))
            {
                var bytes = run.State.ToBytes();
                Assert.Equal("CXPS", System.Text.Encoding.ASCII.GetString(bytes, 0, 4), "magic");
                using (var back = PrefixState.FromBytes(bytes))
                    Assert.Equal(Convert.ToBase64String(bytes), Convert.ToBase64String(back.ToBytes()), "binary round trip");
                using (var back = PrefixState.FromJson(run.State.ToJson()))
                    Assert.Equal(Convert.ToBase64String(bytes), Convert.ToBase64String(back.ToBytes()), "JSON round trip");
                Assert.Fails(Status.InvalidState, () => PrefixState.FromBytes(bytes.Take(bytes.Length - 1).ToArray()), "truncated");
                var flipped = (byte[])bytes.Clone();
                flipped[flipped.Length - 5] ^= 1;
                var e = Assert.Fails(Status.InvalidState, () => PrefixState.FromBytes(flipped), "bit flip");
                Assert.True(e.LibraryMessage.Contains("checksum mismatch"), e.LibraryMessage);
                var two = new PrefixOptions { Conversation = new byte[] { 1, 0, 3 } };
                e = Assert.Fails(Status.InvalidState, () => p.RunPrefix(Messages(3), b, two, run.State), "another conversation");
                Assert.True(e.LibraryMessage.Contains("another conversation"), e.LibraryMessage);
                Assert.Fails(Status.InvalidArgument, () => p.RunPrefix(Messages(3), b, new PrefixOptions { CacheRule = "gemini" }), "cache rule");
                Assert.Fails(Status.InvalidArgument, () => p.RunPrefix(Messages(3), b, new PrefixOptions { MaxValueLoss = 1.5 }), "threshold");
            }
        }
    }
}
