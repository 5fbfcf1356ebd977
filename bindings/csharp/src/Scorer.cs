using System;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Linq;

namespace Ctxpack
{
    /// <summary>The curve of a decay scorer.</summary>
    public enum DecayCurveKind { Exponential = 0, Window = 1, Step = 2 }

    /// <summary>One step of a step curve: Score for ages below MaxAge.</summary>
    public struct DecayWindow
    {
        public DecayWindow(TimeSpan maxAge, double score) { MaxAge = maxAge; Score = score; }
        public TimeSpan MaxAge { get; }
        public double Score { get; }
    }

    /// <summary>A decay curve: build one with Exponential, Window or Step.</summary>
    public sealed class DecayCurve
    {
        DecayCurve(DecayCurveKind kind) { Kind = kind; }

        public DecayCurveKind Kind { get; }
        public TimeSpan HalfLife { get; private set; }
        public TimeSpan MaxAge { get; private set; }
        public IReadOnlyList<DecayWindow> Windows { get; private set; } = new DecayWindow[0];

        /// <summary>2^(-age / halfLife).</summary>
        public static DecayCurve Exponential(TimeSpan halfLife) => new DecayCurve(DecayCurveKind.Exponential) { HalfLife = halfLife };

        /// <summary>1 while age &lt; maxAge, then 0.</summary>
        public static DecayCurve Window(TimeSpan maxAge) => new DecayCurve(DecayCurveKind.Window) { MaxAge = maxAge };

        /// <summary>The score of the first window (youngest first) whose MaxAge exceeds the age,
        /// else the last window's.</summary>
        public static DecayCurve Step(params DecayWindow[] windows) => new DecayCurve(DecayCurveKind.Step) { Windows = windows };
    }

    /// <summary>A child of a composite scorer (see Scorer.WithWeight).</summary>
    public struct WeightedScorer
    {
        public WeightedScorer(Scorer scorer, double weight) { Scorer = scorer; Weight = weight; }
        public Scorer Scorer { get; }
        /// <summary>The raw weight (finite, &gt; 0); weights are normalised by their sum.</summary>
        public double Weight { get; }
    }

    /// <summary>Scores items for relevance. Scorers are immutable and reference-counted by
    /// the library: a composite, scaled scorer or pipeline built from one keeps working after
    /// it is disposed.</summary>
    public sealed class Scorer : IDisposable
    {
        internal readonly ScorerHandle Handle;

        internal Scorer(ScorerHandle handle) { Handle = handle; }

        static Scorer Make(Component.Constructor<ScorerHandle> construct) => new Scorer(Component.Create(construct));

        public void Dispose() => Handle.Dispose();

        /// <summary>Rank by timestamp (RecencyScorer).</summary>
        public static Scorer Recency() => Make(Native.ctxpack_scorer_new_recency);

        /// <summary>Rank by priority (PriorityScorer).</summary>
        public static Scorer Priority() => Make(Native.ctxpack_scorer_new_priority);

        /// <summary>Share of peers sharing a tag (FrequencyScorer).</summary>
        public static Scorer Frequency() => Make(Native.ctxpack_scorer_new_frequency);

        /// <summary>The future-relevance hint, clamped to [0, 1] (ReflexiveScorer).</summary>
        public static Scorer Reflexive() => Make(Native.ctxpack_scorer_new_reflexive);

        /// <summary>Kind weights, the defaults (SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6,
        /// Document 0.4, Message 0.2) or a table replacing them (KindScorer).</summary>
        public static unsafe Scorer Kind([AllowNull] IDictionary<string, double> weights = null)
        {
            if (weights == null) return Make(Native.ctxpack_scorer_new_kind);
            using (var arena = new NativeArena())
            {
                var list = weights.OrderBy(kv => kv.Key, StringComparer.Ordinal).ToList();
                var array = (Native.KindWeight*)arena.Array<Native.KindWeight>(list.Count);
                for (int i = 0; i < list.Count; i++) array[i] = new Native.KindWeight { Kind = arena.Str(list[i].Key), Weight = list[i].Value };
                return Make((out ScorerHandle h, out IntPtr e) =>
                    Native.ctxpack_scorer_new_kind_weights((IntPtr)array, (UIntPtr)list.Count, out h, out e));
            }
        }

        /// <summary>Tag weights (TagScorer; tags are case-sensitive).</summary>
        public static unsafe Scorer Tag(IDictionary<string, double> weights)
        {
            using (var arena = new NativeArena())
            {
                var list = Arg.NotNull(weights, nameof(weights)).OrderBy(kv => kv.Key, StringComparer.Ordinal).ToList();
                var array = (Native.TagWeight*)arena.Array<Native.TagWeight>(list.Count);
                for (int i = 0; i < list.Count; i++) array[i] = new Native.TagWeight { Tag = arena.Str(list[i].Key), Weight = list[i].Value };
                return Make((out ScorerHandle h, out IntPtr e) =>
                    Native.ctxpack_scorer_new_tag((IntPtr)array, (UIntPtr)list.Count, out h, out e));
            }
        }

        /// <summary>The weighted sum of the children's scores (CompositeScorer); weights are
        /// finite, &gt; 0, normalised by their sum. The composite keeps its own reference to
        /// each child.</summary>
        public static unsafe Scorer Composite(params WeightedScorer[] children)
        {
            using (var arena = new NativeArena())
            using (var refs = new HandleRefs())
            {
                var array = (Native.CompositeChild*)arena.Array<Native.CompositeChild>(children.Length);
                for (int i = 0; i < children.Length; i++)
                {
                    var child = children[i].Scorer ?? throw new ArgumentNullException(nameof(children));
                    array[i] = new Native.CompositeChild { Scorer = refs.Add(child.Handle), Weight = children[i].Weight };
                }
                return Make((out ScorerHandle h, out IntPtr e) =>
                    Native.ctxpack_scorer_new_composite((IntPtr)array, (UIntPtr)children.Length, out h, out e));
            }
        }

        /// <summary>This scorer as a child of Composite with the given weight.</summary>
        public WeightedScorer WithWeight(double weight) => new WeightedScorer(this, weight);

        /// <summary>Min-max normalisation of inner (ScaledScorer).</summary>
        public static Scorer Scaled(Scorer inner) =>
            Make((out ScorerHandle h, out IntPtr e) => Native.ctxpack_scorer_new_scaled(Arg.NotNull(inner, nameof(inner)).Handle, out h, out e));

        /// <summary>Freshness by age (DecayScorer) against a fixed "now", or the system clock
        /// (read once per run) when now is null. Items without a timestamp score
        /// nullTimestampScore (default 0.5).</summary>
        public static unsafe Scorer Decay(DecayCurve curve, DateTimeOffset? now = null, double? nullTimestampScore = null)
        {
            using (var arena = new NativeArena())
            {
                var config = (Native.DecayConfig*)arena.Array<Native.DecayConfig>(1);
                Native.ctxpack_decay_config_init((IntPtr)config, Native.Size<Native.DecayConfig>());
                config->Curve = (int)curve.Kind;
                config->HalfLifeNs = checked(curve.HalfLife.Ticks * 100);
                config->MaxAgeNs = checked(curve.MaxAge.Ticks * 100);
                var windows = (Native.DecayWindow*)arena.Array<Native.DecayWindow>(curve.Windows.Count);
                for (int i = 0; i < curve.Windows.Count; i++)
                {
                    windows[i] = new Native.DecayWindow { MaxAgeNs = checked(curve.Windows[i].MaxAge.Ticks * 100), Score = curve.Windows[i].Score };
                }
                config->Windows = (IntPtr)windows;
                config->WindowCount = (UIntPtr)curve.Windows.Count;
                if (now is DateTimeOffset t)
                {
                    config->Clock = 1; // CTXPACK_CLOCK_KIND_FIXED
                    config->FixedNowNs = ContextItem.ToUnixNanos(t);
                }
                if (nullTimestampScore is double s) { config->NullTimestampScore = s; config->HasNullTimestampScore = 1; }
                return Make((out ScorerHandle h, out IntPtr e) => Native.ctxpack_scorer_new_decay((IntPtr)config, out h, out e));
            }
        }

        /// <summary>The "cupel:trust" metadata value clamped to [0, 1], or defaultScore
        /// (MetadataTrustScorer).</summary>
        public static Scorer MetadataTrust(double defaultScore = 0.5) =>
            Make((out ScorerHandle h, out IntPtr e) => Native.ctxpack_scorer_new_metadata_trust(defaultScore, out h, out e));

        /// <summary>boost (finite, &gt; 0) when metadata[key] == value, else 1 (MetadataKeyScorer).</summary>
        public static Scorer MetadataKey(string key, string value, double boost)
        {
            using (var arena = new NativeArena())
            {
                var k = arena.Str(key);
                var v = arena.Str(value);
                return Make((out ScorerHandle h, out IntPtr e) => Native.ctxpack_scorer_new_metadata_key(k, v, boost, out h, out e));
            }
        }

        /// <summary>A scorer written in C#: score is called once per run with every scoreable
        /// item, copied into ContextItems. The delegate is kept alive until the library drops
        /// its last reference to the scorer (which may be when a pipeline using it is
        /// disposed). <see cref="CustomViews"/> reads only the members it uses.</summary>
        public static Scorer Custom(ScoreFunction score)
        {
            Arg.NotNull(score, nameof(score));
            return CustomViews(items => score(items.ToContextItems()));
        }

        /// <summary>A scorer written in C# over views of the items (valid only during the
        /// call), kept alive as <see cref="Custom"/>.</summary>
        public static Scorer CustomViews(ScoreViewFunction score) =>
            new Scorer(Callbacks.Create<ScorerHandle>(score, userData => (out ScorerHandle h, out IntPtr e) =>
                Native.ctxpack_scorer_new_custom_batch(Callbacks.ScoreAllThunk, userData, Callbacks.DestroyThunk, out h, out e)));

        /// <summary>Scores every item against the whole list, in list order (pinned and
        /// negative-token items are scored like any other here). The items are copied into a
        /// temporary list; the ItemList overload takes a list.</summary>
        public double[] Score(IReadOnlyList<ContextItem> items)
        {
            using (var list = new ItemList(Arg.NotNull(items, nameof(items))))
            {
                return Score(list);
            }
        }

        /// <summary>Scores every item of an item list, in list order.</summary>
        public double[] Score(ItemList items)
        {
            var scores = new double[Arg.NotNull(items, nameof(items)).Count];
            Errors.Check(Native.ctxpack_scorer_score(Handle, items.Handle, scores, (UIntPtr)scores.Length, out var error), error);
            return scores;
        }
    }
}
