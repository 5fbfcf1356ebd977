// Runs the conformance vectors (format: shared/spec/08-conformance-format.md) through the
// C# binding: every *.toml under
//   <repo>/tests/vectors           (the project's vectors and, in cupel-1.0.0/, the
//                                  Cupel suite's required tier),
//   each directory of CTXPACK_CONFORMANCE_DIRS (colon-separated; must exist).
// <repo> is CTXPACK_REPO_ROOT (run.sh sets it) or found above the test program.
// Pipeline vectors run through Pipeline.Run: output order, diagnostics (summary, included,
// excluded with the reason's fields, shortfalls), the overflow event and expected run
// errors are compared as the project's Rust runner (tests/conformance) does. Scoring,
// slicing and placing vectors run one stage through Scorer.Score, Slicer.Slice and
// Placer.Place.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;

namespace Ctxpack.Tests
{
    using Table = Dictionary<string, object>;

    static class TableAccess
    {
        public static Table Sub(this Table t, string key) => t.TryGetValue(key, out var v) && v is Table s ? s : new Table();
        public static bool Has(this Table t, string key) => t.ContainsKey(key);
        public static string Str(this Table t, string key) => t.TryGetValue(key, out var v) ? v as string : null;
        public static long? Int(this Table t, string key) => t.TryGetValue(key, out var v) && v is long l ? l : (long?)null;

        /// A float; a TOML integer is accepted too (08 §2, numeric leniency).
        public static double? Float(this Table t, string key) =>
            t.TryGetValue(key, out var v) ? (v is double d ? d : v is long l ? l : (double?)null) : null;

        public static bool Bool(this Table t, string key, bool def) => t.TryGetValue(key, out var v) && v is bool b ? b : def;

        /// An array of tables; an empty inline array counts as present and empty; null when absent.
        public static List<Table> Tables(this Table t, string key)
        {
            if (!t.TryGetValue(key, out var v)) return null;
            if (v is List<Table> list) return list;
            if (v is List<object> empty && empty.Count == 0) return new List<Table>();
            return null;
        }

        public static string ReqStr(this Table t, string key) => t.Str(key) ?? throw new FormatException($"missing string {key}");
        public static double ReqFloat(this Table t, string key) => t.Float(key) ?? throw new FormatException($"missing number {key}");
        public static long ReqInt(this Table t, string key) => t.Int(key) ?? throw new FormatException($"missing integer {key}");
    }

    static class ConformanceVectors
    {
        /// CTXPACK_REPO_ROOT, else the first directory above the test program that holds
        /// include/ctxpack.h.
        internal static string RepoRoot
        {
            get
            {
                var root = Environment.GetEnvironmentVariable("CTXPACK_REPO_ROOT");
                if (!string.IsNullOrEmpty(root)) return root;
                for (var dir = new DirectoryInfo(AppDomain.CurrentDomain.BaseDirectory); dir != null; dir = dir.Parent)
                {
                    if (File.Exists(Path.Combine(dir.FullName, "include/ctxpack.h"))) return dir.FullName;
                }
                throw new SkipException("the repository root was not found; set CTXPACK_REPO_ROOT");
            }
        }

        static IEnumerable<string> Roots()
        {
            foreach (var dir in new[] { Path.Combine(RepoRoot, "tests/vectors") })
            {
                if (Directory.Exists(dir)) yield return dir;
            }
            var extra = Environment.GetEnvironmentVariable("CTXPACK_CONFORMANCE_DIRS") ?? "";
            foreach (var dir in extra.Split(new[] { ':' }, StringSplitOptions.RemoveEmptyEntries))
            {
                if (!Directory.Exists(dir)) throw new AssertionException($"CTXPACK_CONFORMANCE_DIRS names {dir}, which is not a directory");
                yield return dir;
            }
        }

        static readonly Dictionary<string, Action<Table>> StageRunners = new Dictionary<string, Action<Table>>
        {
            ["pipeline"] = Run,
            ["scoring"] = RunScoring,
            ["slicing"] = RunSlicing,
            ["placing"] = RunPlacing,
        };

        [Test]
        public static void AllVectorsPass()
        {
            var failures = new List<string>();
            var counts = new SortedDictionary<string, int>();
            var grouped = 0;
            var skipped = 0;
            foreach (var root in Roots())
            {
                foreach (var path in Directory.GetFiles(root, "*.toml", SearchOption.AllDirectories).OrderBy(p => p, StringComparer.Ordinal))
                {
                    try
                    {
                        var doc = Toml.Parse(File.ReadAllText(path));
                        if (UsesVariants(doc))
                        {
                            skipped++;
                            continue;
                        }
                        if (UsesGroups(doc)) grouped++;
                        var stage = doc.Sub("test").Str("stage") ?? "";
                        counts[stage] = counts.TryGetValue(stage, out var n) ? n + 1 : 1;
                        if (!StageRunners.TryGetValue(stage, out var run)) throw new FormatException($"unknown stage {stage}");
                        run(doc);
                    }
                    catch (Exception e)
                    {
                        failures.Add($"{path}: {e.GetType().Name}: {e.Message}");
                    }
                }
            }
            foreach (var f in failures) Console.WriteLine("       vector FAILED: " + f);
            var total = counts.Values.Sum();
            Console.WriteLine($"       {total - failures.Count} of {total} vectors reproduced ({string.Join(", ", counts.Select(kv => $"{kv.Key} {kv.Value}"))}); {grouped} of them with item groups; {skipped} skipped: the variant keys not read by this runner yet (VariantTests covers variants)");
            // The shared suite alone has eight required pipeline vectors.
            counts.TryGetValue("pipeline", out var pipelines);
            Assert.True(pipelines >= 3, $"found {pipelines} pipeline vectors; expected the Cupel suite in tests/vectors/cupel-1.0.0");
            Assert.True(grouped >= 10, $"found {grouped} vectors with item groups; expected those of tests/vectors/groups");
            Assert.True(failures.Count == 0, $"{failures.Count} of {total} vectors failed");
        }

        /// Whether a vector uses the item-group extension (an item with a group key, or the
        /// group options); they are counted, to show that they ran.

        // Whether a vector gives items variants or sets use_variants (docs/variants.md).
        static bool UsesVariants(Table doc)
        {
            foreach (var key in new[] { "items", "scored_items" })
            {
                foreach (var e in doc.Tables(key) ?? new List<Table>())
                {
                    if (e.Has("variants")) return true;
                }
            }
            return doc.Sub("config").Has("use_variants");
        }

        static bool UsesGroups(Table doc)
        {
            foreach (var key in new[] { "items", "scored_items" })
            {
                foreach (var e in doc.Tables(key) ?? new List<Table>())
                {
                    if (e.Has("group")) return true;
                }
            }
            var config = doc.Sub("config");
            return config.Has("group_value") || config.Has("pinned_first");
        }

        // ---- inputs

        static List<ContextItem> Items(Table doc, string key = "items")
        {
            var items = new List<ContextItem>();
            foreach (var e in doc.Tables(key) ?? new List<Table>())
            {
                var it = new ContextItem(e.ReqStr("content"), e.ReqInt("tokens"))
                {
                    Kind = e.Str("kind"),
                    Source = e.Str("source"),
                    Priority = e.Int("priority"),
                    FutureRelevanceHint = e.Float("futureRelevanceHint"),
                    Pinned = e.Bool("pinned", false),
                    OriginalTokens = e.Int("original_tokens"),
                    Group = e.Str("group"),
                };
                if (e.TryGetValue("timestamp", out var ts)) it.TimestampUnixNanos = ((TomlInstant)ts).UnixNanos;
                if (e.TryGetValue("tags", out var tags)) it.Tags = ((List<object>)tags).Cast<string>().ToList();
                foreach (var kv in e.Sub("metadata"))
                {
                    if (kv.Value is string s) it.Metadata[kv.Key] = s; // non-string values are dropped (08 §4.1)
                }
                items.Add(it);
            }
            return items;
        }

        static Budget Budget(Table doc)
        {
            var b = doc.Sub("budget");
            var slots = b.Sub("reserved_slots").OrderBy(kv => kv.Key, StringComparer.Ordinal)
                .Select(kv => new KeyValuePair<string, long>(kv.Key, (long)kv.Value));
            return new Budget(b.ReqInt("max_tokens"), b.ReqInt("target_tokens"), b.Int("output_reserve") ?? 0,
                slots, b.Float("estimation_safety_margin_percent") ?? 0);
        }

        /// An inner component given as a name (built without configuration) or as a table
        /// with `type` that is also its configuration.
        static (string name, Table config) NamedOrTable(Table cfg, string key, string def)
        {
            if (cfg.TryGetValue(key, out var v))
            {
                if (v is string s) return (s, new Table());
                if (v is Table t) return (t.ReqStr("type"), t);
            }
            if (def != null) return (def, new Table());
            throw new FormatException($"missing {key}");
        }

        static TimeSpan Seconds(Table t, string key) =>
            TimeSpan.FromMilliseconds(Math.Truncate(t.ReqFloat(key) * 1000)); // whole ms, as the reference harness

        static Dictionary<string, double> Weights(List<Table> entries, string nameKey) =>
            (entries ?? new List<Table>()).ToDictionary(e => e.ReqStr(nameKey), e => e.ReqFloat("weight"));

        static Scorer BuildScorer(string name, Table cfg)
        {
            switch (name)
            {
                case "recency": return Scorer.Recency();
                case "priority": return Scorer.Priority();
                case "frequency": return Scorer.Frequency();
                case "reflexive": return Scorer.Reflexive();
                case "kind":
                    var weights = cfg.Tables("weights");
                    return weights == null || cfg.Bool("use_default_weights", false) ? Scorer.Kind() : Scorer.Kind(Weights(weights, "kind"));
                case "tag": return Scorer.Tag(Weights(cfg.Tables("tag_weights"), "tag"));
                case "composite": return Composite(cfg.Tables("children") ?? cfg.Tables("scorers") ?? new List<Table>());
                case "scaled":
                    var (innerName, innerCfg) = NamedOrTable(cfg, "inner_scorer", null);
                    using (var inner = BuildScorer(innerName, innerCfg)) return Scorer.Scaled(inner);
                case "decay": return Decay(cfg);
                case "metadata_trust": return Scorer.MetadataTrust(cfg.Float("default_score") ?? 0.5);
                case "metadata_key": return Scorer.MetadataKey(cfg.ReqStr("key"), cfg.ReqStr("value"), cfg.ReqFloat("boost"));
            }
            throw new FormatException($"unknown scorer {name}");
        }

        static Scorer Composite(List<Table> entries)
        {
            var children = new List<WeightedScorer>();
            try
            {
                foreach (var e in entries) children.Add(BuildScorer(e.ReqStr("type"), e).WithWeight(e.ReqFloat("weight")));
                return Scorer.Composite(children.ToArray());
            }
            finally
            {
                foreach (var child in children) child.Scorer.Dispose(); // the composite keeps its own references
            }
        }

        static Scorer Decay(Table cfg)
        {
            if (!cfg.TryGetValue("reference_time", out var now)) throw new FormatException("decay: missing reference_time");
            var curveCfg = cfg.Sub("curve");
            DecayCurve curve;
            switch (curveCfg.ReqStr("type"))
            {
                case "exponential": curve = DecayCurve.Exponential(Seconds(curveCfg, "half_life_secs")); break;
                case "window": curve = DecayCurve.Window(Seconds(curveCfg, "max_age_secs")); break;
                case "step":
                    curve = DecayCurve.Step((curveCfg.Tables("windows") ?? new List<Table>())
                        .Select(w => new DecayWindow(Seconds(w, "max_age_secs"), w.ReqFloat("score"))).ToArray());
                    break;
                default: throw new FormatException("unknown decay curve");
            }
            var nowNs = ((TomlInstant)now).UnixNanos;
            return Scorer.Decay(curve, ContextItem.FromUnixNanos(nowNs), cfg.Float("null_timestamp_score"));
        }

        static CountQuotaEntry[] CountEntries(Table cfg) =>
            (cfg.Tables("entries") ?? new List<Table>())
                .Select(e => new CountQuotaEntry(e.ReqStr("kind"), checked((int)e.ReqInt("require_count")), checked((int)e.ReqInt("cap_count"))))
                .ToArray();

        static Scarcity Scarcity(Table cfg)
        {
            switch (cfg.Str("scarcity_behavior"))
            {
                case null: case "degrade": return Ctxpack.Scarcity.Degrade;
                case "throw": return Ctxpack.Scarcity.Throw;
                default: throw new FormatException("unknown scarcity_behavior");
            }
        }

        static Slicer BuildSlicer(string name, Table cfg)
        {
            Func<string, Slicer> Inner = def =>
            {
                var (innerName, innerCfg) = NamedOrTable(cfg, "inner_slicer", def);
                return BuildSlicer(innerName, innerCfg);
            };
            long bucket = cfg.Int("bucket_size") ?? Slicer.DefaultBucketSize;
            switch (name)
            {
                case "greedy": return Slicer.Greedy();
                case "knapsack": return Slicer.Knapsack(bucket);
                case "quota":
                    var quotas = (cfg.Tables("quotas") ?? new List<Table>())
                        .Select(q => new QuotaEntry(q.ReqStr("kind"), q.ReqFloat("require"), q.ReqFloat("cap"))).ToArray();
                    using (var inner = Inner(null)) return Slicer.Quota(inner, quotas);
                case "count_quota":
                    var entries = CountEntries(cfg);
                    var scarcity = Scarcity(cfg);
                    using (var inner = Inner("greedy")) return Slicer.CountQuota(inner, scarcity, entries);
                case "count_constrained_knapsack":
                    return Slicer.CountConstrainedKnapsack(Scarcity(cfg), CountEntries(cfg), bucket);
            }
            throw new FormatException($"unknown slicer {name}");
        }

        static Placer BuildPlacer(string name)
        {
            switch (name)
            {
                case "chronological": return Placer.Chronological();
                case "u-shaped": return Placer.UShaped();
            }
            throw new FormatException($"unknown placer {name}");
        }

        static Pipeline BuildPipeline(Table cfg)
        {
            var entries = cfg.Tables("scorers");
            if (entries == null || entries.Count == 0) throw new FormatException("[[config.scorers]] is required");
            var strategies = new Dictionary<string, OverflowStrategy>
            {
                ["throw"] = OverflowStrategy.Throw, ["truncate"] = OverflowStrategy.Truncate, ["proceed"] = OverflowStrategy.Proceed,
            };
            var strategy = strategies[cfg.Str("overflow_strategy") ?? "throw"];
            using (var scorer = entries.Count == 1 ? BuildScorer(entries[0].ReqStr("type"), entries[0]) : Composite(entries))
            using (var slicer = BuildSlicer(cfg.ReqStr("slicer"), cfg))
            using (var placer = BuildPlacer(cfg.ReqStr("placer")))
            {
                return new Pipeline(scorer, slicer, placer, cfg.Bool("deduplication", true), strategy, GroupValueOf(cfg),
                    cfg.Bool("pinned_first", false));
            }
        }

        /// [config] group_value (default sum).
        static GroupValue GroupValueOf(Table cfg)
        {
            switch (cfg.Str("group_value") ?? "sum")
            {
                case "sum": return GroupValue.Sum;
                case "max": return GroupValue.Max;
                case "mean": return GroupValue.Mean;
                default: throw new FormatException($"unknown group_value {cfg.Str("group_value")}");
            }
        }

        // ---- running and comparing

        static void Run(Table doc)
        {
            var items = Items(doc);
            using (var budget = Budget(doc))
            using (var pipeline = BuildPipeline(doc.Sub("config")))
            {
                RunResult result;
                try
                {
                    result = pipeline.Run(items, budget);
                }
                catch (CtxpackException) when (doc.Sub("test").Bool("expect_run_error", false))
                {
                    return;
                }
                if (doc.Sub("test").Bool("expect_run_error", false)) throw new AssertionException("the run succeeded, but the vector expects an error");

                Func<IEnumerable<int>, string[]> Contents = indices => indices.Select(i => items[i].Content).ToArray();
                var expectedOutput = (doc.Tables("expected_output") ?? new List<Table>()).Select(e => e.Str("content"));
                Assert.Sequence(expectedOutput, Contents(result.Indices), "output");

                var expected = doc.Sub("expected");
                if (expected.Has("overflow"))
                {
                    var over = expected.Sub("overflow");
                    var tokens = over.Int("tokens_over_budget") ?? 0;
                    if (tokens == 0) Assert.True(result.Overflow == null, "expected no overflow event");
                    else
                    {
                        Assert.True(result.Overflow != null, "expected an overflow event");
                        Assert.Equal(tokens, result.Overflow.TokensOverBudget, "tokens_over_budget");
                        if (over.TryGetValue("overflowing_contents", out var oc))
                            Assert.Sequence(((List<object>)oc).Cast<string>(), Contents(result.Overflow.Items), "overflowing_contents");
                    }
                }
                if (!expected.Has("diagnostics")) return;

                // A traced run must place the same items, and its report must match.
                var traced = pipeline.Run(items, budget, TraceDetail.Item);
                Assert.Sequence(result.Indices, traced.Indices, "traced run indices");
                var eps = doc.Sub("tolerance").Float("score_epsilon") ?? 1e-9;
                CheckReport(expected.Sub("diagnostics"), traced.Report, items, eps);
            }
        }

        static void CheckReport(Table want, SelectionReport r, List<ContextItem> items, double eps)
        {
            Assert.True(r != null, "the traced run has no report");
            var summary = want.Sub("summary");
            if (summary.Int("total_candidates") is long tc) Assert.Equal(tc, (long)r.TotalCandidates, "total_candidates");
            if (summary.Int("total_tokens_considered") is long tt) Assert.Equal(tt, r.TotalTokensConsidered, "total_tokens_considered");

            var included = want.Tables("included");
            if (included != null)
            {
                Assert.Equal(included.Count, r.Included.Count, "included count");
                for (int k = 0; k < included.Count; k++)
                {
                    var (e, got) = (included[k], r.Included[k]);
                    Assert.Equal(e.Str("content"), items[got.Index].Content, $"included[{k}]");
                    if (e.Float("score_approx") is double s) Assert.Near(s, got.Score, $"included[{k}] score", eps);
                    if (e.Str("inclusion_reason") is string reason) Assert.Equal(reason, got.Reason.ToString(), $"included[{k}] reason");
                }
            }
            var excluded = want.Tables("excluded");
            if (excluded != null)
            {
                Assert.Equal(excluded.Count, r.Excluded.Count, "excluded count");
                for (int k = 0; k < excluded.Count; k++)
                {
                    var (e, got) = (excluded[k], r.Excluded[k]);
                    Assert.Equal(e.Str("content"), items[got.Index].Content, $"excluded[{k}]");
                    if (e.Float("score_approx") is double s) Assert.Near(s, got.Score, $"excluded[{k}] score", eps);
                    Assert.Equal(e.Str("exclusion_reason"), got.Name, $"excluded[{k}] reason");
                    if (!ReasonFields.TryGetValue(got.Name, out var fields)) continue;
                    foreach (var field in fields.Where(e.Has))
                    {
                        Assert.True(FieldMatches(e[field], ExcludedField(got, field), eps),
                            $"excluded[{k}].{field}: expected {e[field]}, got {ExcludedField(got, field)}");
                    }
                }
            }
            var shortfalls = want.Tables("shortfalls");
            if (shortfalls != null)
            {
                var expectedShortfalls = shortfalls.Select(s =>
                    new Shortfall(s.ReqStr("kind"), (ulong)s.ReqInt("required_count"), (ulong)s.ReqInt("satisfied_count")));
                Assert.Sequence(expectedShortfalls, r.Shortfalls, "shortfalls");
            }
            var groups = want.Tables("groups");
            if (groups != null)
            {
                Assert.Equal(groups.Count, r.Groups.Count, "group count");
                for (int k = 0; k < groups.Count; k++)
                {
                    var w = groups[k];
                    var g = r.Groups[k];
                    var groupExcluded = g.Decision == GroupDecision.Excluded;
                    Assert.Equal(w.ReqStr("key"), g.Key, $"groups[{k}].key");
                    Assert.Sequence(((List<object>)w["members"]).Cast<string>(), g.Members.Select(i => items[i].Content), $"groups[{k}].members");
                    Assert.Equal(w.ReqStr("decision"), g.Decision.ToString(), $"groups[{k}].decision");
                    if (w.Int("tokens") is long tokens) Assert.Equal(tokens, g.Tokens, $"groups[{k}].tokens");
                    if (w.Str("stage") is string stage) Assert.Equal(stage, groupExcluded ? g.Stage.ToString() : "(none)", $"groups[{k}].stage");
                    if (w.Str("member") is string member) Assert.Equal(member, groupExcluded ? items[g.MemberIndex].Content : "(none)", $"groups[{k}].member");
                    if (w.Str("pinned_by") is string pinnedBy) Assert.Equal(pinnedBy, g.PinnedBy is int p ? items[p].Content : "(none)", $"groups[{k}].pinned_by");
                    Assert.Equal(w.Bool("partial_selection", false), g.PartialSelection, $"groups[{k}].partial_selection");
                }
            }
        }

        /// The wire fields of each exclusion reason (spec 06 §7.1); other keys are ignored.
        static readonly Dictionary<string, string[]> ReasonFields = new Dictionary<string, string[]>
        {
            ["BudgetExceeded"] = new[] { "item_tokens", "available_tokens" },
            ["ScoredTooLow"] = new[] { "score", "threshold" },
            ["Deduplicated"] = new[] { "deduplicated_against" },
            ["QuotaCapExceeded"] = new[] { "kind", "cap", "actual" },
            ["QuotaRequireDisplaced"] = new[] { "displaced_by_kind" },
            ["NegativeTokens"] = new[] { "tokens" },
            ["PinnedOverride"] = new[] { "displaced_by" },
            ["Filtered"] = new[] { "filter_name" },
            ["CountCapExceeded"] = new[] { "kind", "cap", "count" },
            ["CountRequireCandidatesExhausted"] = new[] { "kind" },
            ["GroupExcluded"] = new[] { "group", "member_index", "member_content", "member_reason" },
        };

        static object ExcludedField(ExcludedEntry e, string field)
        {
            switch (field)
            {
                case "item_tokens": return e.ItemTokens;
                case "available_tokens": return e.AvailableTokens;
                case "score": return e.ReasonScore;
                case "threshold": return e.Threshold;
                case "deduplicated_against": return e.DeduplicatedAgainst;
                case "kind": return e.Kind;
                case "cap": return e.Reason == ExclusionReason.CountCapExceeded ? (long)e.CountCap : e.Cap;
                case "actual": return e.Actual;
                case "count": return (long)e.Count;
                case "displaced_by_kind": return e.DisplacedByKind;
                case "tokens": return e.Tokens;
                case "displaced_by": return e.DisplacedBy;
                case "filter_name": return e.FilterName;
                case "group": return e.Group;
                case "member_index": return (long)e.MemberIndex;
                case "member_content": return e.MemberContent;
                case "member_reason": return e.MemberReason;
            }
            return null;
        }

        /// Integers and strings exactly, a float on either side by the score tolerance.
        static bool FieldMatches(object want, object got, double eps)
        {
            if (want is long w && got is long g) return w == g;
            if ((want is long || want is double) && (got is long || got is double))
                return Math.Abs(Convert.ToDouble(want) - Convert.ToDouble(got)) < eps;
            return Equals(want, got);
        }

        // ---- one stage alone

        static double Epsilon(Table doc) => doc.Sub("tolerance").Float("score_epsilon") ?? 1e-9;

        static double[] Scores(Table doc, string key) =>
            (doc.Tables(key) ?? new List<Table>()).Select(e => e.ReqFloat("score")).ToArray();

        /// expect_construction_error: building must fail (true when the vector is done), in
        /// the library or already in the binding (a negative count has no size_t form).
        static bool ConstructionError(Table doc, Func<IDisposable> build)
        {
            if (!doc.Sub("test").Bool("expect_construction_error", false)) return false;
            try
            {
                build().Dispose();
            }
            catch (Exception e) when (e is CtxpackException || e is ArgumentException)
            {
                return true;
            }
            throw new AssertionException("construction succeeded, but the vector expects an error");
        }

        static void RunScoring(Table doc)
        {
            var name = doc.Sub("test").ReqStr("scorer");
            var cfg = doc.Sub("config");
            if (ConstructionError(doc, () => BuildScorer(name, cfg))) return;
            var items = Items(doc);
            double[] scores;
            using (var scorer = BuildScorer(name, cfg)) scores = scorer.Score(items);
            var expected = doc.Tables("expected") ?? new List<Table>();
            Assert.Equal(items.Count, expected.Count, "expectations per item");
            foreach (var e in expected)
            {
                var content = e.ReqStr("content");
                var matches = Enumerable.Range(0, items.Count).Where(i => items[i].Content == content).ToList();
                Assert.True(matches.Count > 0, $"no item {content}");
                foreach (var i in matches) Assert.Near(e.ReqFloat("score_approx"), scores[i], content, Epsilon(doc));
            }
        }

        static void RunSlicing(Table doc)
        {
            var name = doc.Sub("test").ReqStr("slicer");
            var cfg = doc.Sub("config");
            if (ConstructionError(doc, () => BuildSlicer(name, cfg))) return;
            var items = Items(doc, "scored_items");
            var b = doc.Sub("budget");
            var target = b.ReqInt("target_tokens");
            using (var budget = new Budget(b.Int("max_tokens") ?? target, target))
            using (var slicer = BuildSlicer(name, cfg))
            {
                SliceResult result;
                try
                {
                    result = slicer.Slice(items, Scores(doc, "scored_items"), budget, GroupValueOf(cfg));
                }
                catch (CtxpackException) when (doc.Sub("test").Bool("expect_run_error", false))
                {
                    return;
                }
                if (doc.Sub("test").Bool("expect_run_error", false)) throw new AssertionException("the slice succeeded, but the vector expects an error");
                var expected = doc.Sub("expected");
                if (!expected.TryGetValue("selected_contents", out var selected)) throw new FormatException("missing expected.selected_contents");
                Assert.Sequence(((List<object>)selected).Cast<string>().OrderBy(x => x, StringComparer.Ordinal),
                    result.Selected.Select(i => items[i].Content).OrderBy(x => x, StringComparer.Ordinal), "selected (as a multiset)");
                if (expected.Int("shortfall_count") is long shortfalls) Assert.Equal(shortfalls, (long)result.Shortfalls.Count, "shortfall_count");
                if (expected.Int("cap_excluded_count") is long capped) Assert.Equal(capped, (long)result.CapExcluded.Count, "cap_excluded_count");
            }
        }

        static void RunPlacing(Table doc)
        {
            var name = doc.Sub("test").Str("placer") ?? doc.Sub("config").ReqStr("placer");
            var items = Items(doc);
            using (var placer = BuildPlacer(name))
            {
                var order = placer.Place(items, Scores(doc, "items"), GroupValueOf(doc.Sub("config")));
                var expected = doc.Sub("expected").TryGetValue("ordered_contents", out var o) ? ((List<object>)o).Cast<string>() : Enumerable.Empty<string>();
                Assert.Sequence(expected, order.Select(i => items[i].Content), "order");
            }
        }
    }
}
