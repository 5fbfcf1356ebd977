package ctxpack_test

// Runs the conformance vectors (format: shared/spec/08-conformance-format.md) through the
// Go binding: every *.toml under
//   ../../tests/vectors            (the project's vectors and, in cupel-1.0.0/, the
//                                  Cupel suite's required tier),
//   each directory of CTXPACK_CONFORMANCE_DIRS (colon-separated; must exist).
// Pipeline vectors run through Pipeline.Run: output order, diagnostics (summary,
// included, excluded with the reason's fields, shortfalls), the overflow event and
// expected run errors are compared as the project's Rust runner (tests/conformance) does,
// including its format extensions. Scoring, slicing and placing vectors run one stage
// through Scorer.Score, Slicer.Slice and Placer.Place.

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctxpack/ctxpack/bindings/go"
)

func vectorRoots(t *testing.T) []string {
	var roots []string
	for _, dir := range []string{"../../tests/vectors"} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			roots = append(roots, dir)
		} else {
			t.Logf("no vectors at %s", dir)
		}
	}
	for _, dir := range strings.Split(os.Getenv("CTXPACK_CONFORMANCE_DIRS"), ":") {
		if dir == "" {
			continue
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("CTXPACK_CONFORMANCE_DIRS names %s, which is not a directory", dir)
			continue
		}
		roots = append(roots, dir)
	}
	return roots
}

type vectorFile struct {
	path string // relative to its root
	doc  table
}

// allVectors reads every *.toml under the roots.
func allVectors(t *testing.T) []vectorFile {
	var out []vectorFile
	for _, root := range vectorRoots(t) {
		var paths []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".toml") {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(paths)
		for _, p := range paths {
			text, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := parseTOML(string(text))
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, vectorFile{rel, doc})
		}
	}
	return out
}

var stageRunners = map[string]func(table) error{
	"pipeline": runPipelineVector,
	"scoring":  runScoringVector,
	"slicing":  runSlicingVector,
	"placing":  runPlacingVector,
}

func TestConformanceVectors(t *testing.T) {
	vectors := allVectors(t)
	counts := map[string]int{}
	for _, v := range vectors {
		v := v
		test := sub(v.doc, "test")
		name, _ := getStr(test, "name")
		stage, _ := getStr(test, "stage")
		if usesVariants(v.doc) {
			counts["skipped (item variants)"]++
			t.Run(v.path, func(t *testing.T) {
				t.Skipf("%s (%s): this runner does not read the variant keys yet (variants_test.go covers variants)", v.path, name)
			})
			continue
		}
		counts[stage]++
		if usesGroups(v.doc) {
			counts["with item groups"]++
		}
		t.Run(v.path, func(t *testing.T) {
			run, ok := stageRunners[stage]
			if !ok {
				t.Fatalf("%s (%s): unknown stage %q", v.path, name, stage)
			}
			if err := run(v.doc); err != nil {
				t.Errorf("%s (%s): %v", v.path, name, err)
			}
		})
	}
	t.Logf("vectors by stage: %v", counts)
	// The project's own vectors include the item-group ones (../../tests/vectors/groups).
	if counts["with item groups"] < 10 {
		t.Fatalf("found %d vectors with item groups; expected those of ../../tests/vectors/groups", counts["with item groups"])
	}
	// The shared suite alone has eight required pipeline vectors.
	if counts["pipeline"] < 3 {
		t.Fatalf("found %d pipeline vectors; expected the Cupel suite in ../../tests/vectors/cupel-1.0.0", counts["pipeline"])
	}
}

// usesGroups reports whether a vector uses the item-group extension (an item with a group
// key, or the group options); they are counted, to show that they ran.
func usesGroups(doc table) bool {
	for _, key := range []string{"items", "scored_items"} {
		entries, _ := getTables(doc, key)
		for _, e := range entries {
			if _, ok := e["group"]; ok {
				return true
			}
		}
	}
	config := sub(doc, "config")
	_, value := config["group_value"]
	_, first := config["pinned_first"]
	return value || first
}

// usesVariants reports whether a vector gives items variants or sets use_variants
// (docs/variants.md).
func usesVariants(doc table) bool {
	for _, key := range []string{"items", "scored_items"} {
		entries, _ := getTables(doc, key)
		for _, e := range entries {
			if _, ok := e["variants"]; ok {
				return true
			}
		}
	}
	_, off := sub(doc, "config")["use_variants"]
	return off
}

// ---- typed access to the parsed TOML

func sub(t table, key string) table {
	s, _ := t[key].(table)
	if s == nil {
		return table{}
	}
	return s
}

func getStr(t table, key string) (string, bool) {
	s, ok := t[key].(string)
	return s, ok
}

func getInt(t table, key string) (int64, bool) {
	i, ok := t[key].(int64)
	return i, ok
}

// getFloat accepts a TOML integer too (08 §2, numeric leniency).
func getFloat(t table, key string) (float64, bool) {
	switch v := t[key].(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

func getBool(t table, key string, def bool) bool {
	if b, ok := t[key].(bool); ok {
		return b
	}
	return def
}

// getTables returns an array of tables; an empty inline array counts (present, empty).
func getTables(t table, key string) ([]table, bool) {
	switch v := t[key].(type) {
	case []table:
		return v, true
	case []interface{}:
		if len(v) == 0 {
			return []table{}, true
		}
	}
	return nil, false
}

func reqStr(t table, key string) (string, error) {
	if s, ok := getStr(t, key); ok {
		return s, nil
	}
	return "", fmt.Errorf("missing string %q", key)
}

func reqFloat(t table, key string) (float64, error) {
	if f, ok := getFloat(t, key); ok {
		return f, nil
	}
	return 0, fmt.Errorf("missing number %q", key)
}

func seconds(t table, key string) (time.Duration, error) {
	s, err := reqFloat(t, key)
	// Whole milliseconds, truncated, as the reference harness converts (08 §6.1).
	return time.Duration(int64(s*1000)) * time.Millisecond, err
}

// ---- building the inputs

func vectorItems(doc table) ([]ctxpack.Item, error) { return itemsAt(doc, "items") }

// itemsAt reads an item array ([[items]], or [[scored_items]] of slicing vectors).
func itemsAt(doc table, key string) ([]ctxpack.Item, error) {
	entries, _ := getTables(doc, key)
	items := make([]ctxpack.Item, len(entries))
	for i, e := range entries {
		it := &items[i]
		var err error
		if it.Content, err = reqStr(e, "content"); err != nil {
			return nil, fmt.Errorf("%s[%d]: %v", key, i, err)
		}
		var ok bool
		if it.Tokens, ok = getInt(e, "tokens"); !ok {
			return nil, fmt.Errorf("%s[%d]: missing integer tokens", key, i)
		}
		it.Kind, _ = getStr(e, "kind")
		it.Source, _ = getStr(e, "source")
		if ts, ok := e["timestamp"].(time.Time); ok {
			it.Timestamp = ts
		}
		if p, ok := getInt(e, "priority"); ok {
			it.Priority = ctxpack.Int64(p)
		}
		if tags, ok := e["tags"].([]interface{}); ok {
			it.Tags = []string{}
			for _, tag := range tags {
				it.Tags = append(it.Tags, tag.(string))
			}
		}
		if h, ok := getFloat(e, "futureRelevanceHint"); ok {
			it.FutureRelevanceHint = ctxpack.Float64(h)
		}
		it.Pinned = getBool(e, "pinned", false)
		if md, ok := e["metadata"].(table); ok {
			it.Metadata = map[string]string{}
			for k, v := range md {
				if s, ok := v.(string); ok { // non-string values are dropped (08 §4.1)
					it.Metadata[k] = s
				}
			}
		}
		if o, ok := getInt(e, "original_tokens"); ok {
			it.OriginalTokens = ctxpack.Int64(o)
		}
		it.Group, _ = getStr(e, "group")
	}
	return items, nil
}

func vectorBudget(doc table) (*ctxpack.Budget, error) {
	b := sub(doc, "budget")
	max, ok1 := getInt(b, "max_tokens")
	target, ok2 := getInt(b, "target_tokens")
	if !ok1 || !ok2 {
		return nil, errors.New("[budget] needs max_tokens and target_tokens")
	}
	reserve, _ := getInt(b, "output_reserve")
	opts := []ctxpack.BudgetOption{ctxpack.WithOutputReserve(reserve)}
	slots := sub(b, "reserved_slots")
	kinds := make([]string, 0, len(slots))
	for k := range slots {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		n, _ := slots[k].(int64)
		opts = append(opts, ctxpack.WithReservedSlot(k, n))
	}
	if m, ok := getFloat(b, "estimation_safety_margin_percent"); ok {
		opts = append(opts, ctxpack.WithSafetyMargin(m))
	}
	return ctxpack.NewBudget(max, target, opts...)
}

// namedOrTable reads an inner component given as a name (built without configuration)
// or as a table with `type` that is also its configuration.
func namedOrTable(cfg table, key, def string) (string, table, error) {
	switch v := cfg[key].(type) {
	case string:
		return v, table{}, nil
	case table:
		name, err := reqStr(v, "type")
		return name, v, err
	case nil:
		if def != "" {
			return def, table{}, nil
		}
	}
	return "", nil, fmt.Errorf("missing %q", key)
}

// buildScorer builds a scorer from its name and configuration (08 §6.1); composite
// children are under "children" in a scorer entry and "scorers" at the top level.
func buildScorer(name string, cfg table) (*ctxpack.Scorer, error) {
	switch name {
	case "recency":
		return ctxpack.NewRecencyScorer()
	case "priority":
		return ctxpack.NewPriorityScorer()
	case "frequency":
		return ctxpack.NewFrequencyScorer()
	case "reflexive":
		return ctxpack.NewReflexiveScorer()
	case "kind":
		entries, ok := getTables(cfg, "weights")
		if !ok || getBool(cfg, "use_default_weights", false) {
			return ctxpack.NewKindScorer()
		}
		w, err := weightMap(entries, "kind")
		if err != nil {
			return nil, err
		}
		return ctxpack.NewKindScorerWithWeights(w)
	case "tag":
		entries, _ := getTables(cfg, "tag_weights")
		w, err := weightMap(entries, "tag")
		if err != nil {
			return nil, err
		}
		return ctxpack.NewTagScorer(w)
	case "composite":
		entries, ok := getTables(cfg, "children")
		if !ok {
			entries, _ = getTables(cfg, "scorers")
		}
		return compositeOf(entries)
	case "scaled":
		innerName, innerCfg, err := namedOrTable(cfg, "inner_scorer", "")
		if err != nil {
			return nil, err
		}
		inner, err := buildScorer(innerName, innerCfg)
		if err != nil {
			return nil, err
		}
		defer inner.Close()
		return ctxpack.NewScaledScorer(inner)
	case "decay":
		return decayScorer(cfg)
	case "metadata_trust":
		def := ctxpack.DefaultMetadataTrustScore
		if d, ok := getFloat(cfg, "default_score"); ok {
			def = d
		}
		return ctxpack.NewMetadataTrustScorer(def)
	case "metadata_key":
		key, err1 := reqStr(cfg, "key")
		value, err2 := reqStr(cfg, "value")
		boost, err3 := reqFloat(cfg, "boost")
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, err
		}
		return ctxpack.NewMetadataKeyScorer(key, value, boost)
	}
	return nil, fmt.Errorf("unknown scorer %q", name)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func weightMap(entries []table, nameKey string) (map[string]float64, error) {
	w := map[string]float64{}
	for _, e := range entries {
		name, err1 := reqStr(e, nameKey)
		weight, err2 := reqFloat(e, "weight")
		if err := firstErr(err1, err2); err != nil {
			return nil, err
		}
		w[name] = weight
	}
	return w, nil
}

func compositeOf(entries []table) (*ctxpack.Scorer, error) {
	var children []ctxpack.WeightedScorer
	defer func() {
		for _, c := range children {
			c.Scorer.Close() // the composite keeps its own references
		}
	}()
	for _, e := range entries {
		name, err1 := reqStr(e, "type")
		weight, err2 := reqFloat(e, "weight")
		if err := firstErr(err1, err2); err != nil {
			return nil, err
		}
		s, err := buildScorer(name, e)
		if err != nil {
			return nil, err
		}
		children = append(children, ctxpack.WeightedScorer{Scorer: s, Weight: weight})
	}
	return ctxpack.NewCompositeScorer(children...)
}

func decayScorer(cfg table) (*ctxpack.Scorer, error) {
	now, ok := cfg["reference_time"].(time.Time)
	if !ok {
		return nil, errors.New("decay: missing reference_time")
	}
	curveCfg := sub(cfg, "curve")
	kind, err := reqStr(curveCfg, "type")
	if err != nil {
		return nil, err
	}
	var curve ctxpack.DecayCurve
	switch kind {
	case "exponential":
		d, err := seconds(curveCfg, "half_life_secs")
		if err != nil {
			return nil, err
		}
		curve = ctxpack.ExponentialDecay(d)
	case "window":
		d, err := seconds(curveCfg, "max_age_secs")
		if err != nil {
			return nil, err
		}
		curve = ctxpack.WindowDecay(d)
	case "step":
		entries, _ := getTables(curveCfg, "windows")
		var windows []ctxpack.DecayWindow
		for _, w := range entries {
			d, err1 := seconds(w, "max_age_secs")
			score, err2 := reqFloat(w, "score")
			if err := firstErr(err1, err2); err != nil {
				return nil, err
			}
			windows = append(windows, ctxpack.DecayWindow{MaxAge: d, Score: score})
		}
		curve = ctxpack.StepDecay(windows...)
	default:
		return nil, fmt.Errorf("unknown decay curve %q", kind)
	}
	dc := ctxpack.DecayConfig{Curve: curve, Now: now}
	if s, ok := getFloat(cfg, "null_timestamp_score"); ok {
		dc.NullTimestampScore = ctxpack.Float64(s)
	}
	return ctxpack.NewDecayScorer(dc)
}

func countEntries(cfg table) ([]ctxpack.CountQuotaEntry, error) {
	entries, _ := getTables(cfg, "entries")
	var out []ctxpack.CountQuotaEntry
	for _, e := range entries {
		kind, err := reqStr(e, "kind")
		if err != nil {
			return nil, err
		}
		req, ok1 := getInt(e, "require_count")
		cap, ok2 := getInt(e, "cap_count")
		// The counts are unsigned in the ABI (and in CountQuotaEntry): a negative one has no
		// form to pass, so the vector's construction fails here.
		if !ok1 || !ok2 || req < 0 || cap < 0 {
			return nil, errors.New("count quota entries need require_count and cap_count >= 0")
		}
		out = append(out, ctxpack.CountQuotaEntry{Kind: kind, RequireCount: uint64(req), CapCount: uint64(cap)})
	}
	return out, nil
}

func scarcity(cfg table) (ctxpack.Scarcity, error) {
	switch s, _ := getStr(cfg, "scarcity_behavior"); s {
	case "", "degrade":
		return ctxpack.ScarcityDegrade, nil
	case "throw":
		return ctxpack.ScarcityThrow, nil
	default:
		return 0, fmt.Errorf("unknown scarcity_behavior %q", s)
	}
}

func bucketSize(cfg table) int64 {
	if b, ok := getInt(cfg, "bucket_size"); ok {
		return b
	}
	return ctxpack.DefaultKnapsackBucketSize
}

// buildSlicer builds a slicer from its name and the [config] table (08 §6.2).
func buildSlicer(name string, cfg table) (*ctxpack.Slicer, error) {
	inner := func(def string) (*ctxpack.Slicer, error) {
		innerName, innerCfg, err := namedOrTable(cfg, "inner_slicer", def)
		if err != nil {
			return nil, err
		}
		return buildSlicer(innerName, innerCfg)
	}
	switch name {
	case "greedy":
		return ctxpack.NewGreedySlicer()
	case "knapsack":
		return ctxpack.NewKnapsackSlicer(bucketSize(cfg), 0)
	case "quota":
		in, err := inner("")
		if err != nil {
			return nil, err
		}
		defer in.Close()
		entries, _ := getTables(cfg, "quotas")
		var quotas []ctxpack.QuotaEntry
		for _, q := range entries {
			kind, err1 := reqStr(q, "kind")
			req, err2 := reqFloat(q, "require")
			cap, err3 := reqFloat(q, "cap")
			if err := firstErr(err1, err2, err3); err != nil {
				return nil, err
			}
			quotas = append(quotas, ctxpack.QuotaEntry{Kind: kind, Require: req, Cap: cap})
		}
		return ctxpack.NewQuotaSlicer(in, quotas...)
	case "count_quota":
		entries, err1 := countEntries(cfg)
		sc, err2 := scarcity(cfg)
		if err := firstErr(err1, err2); err != nil {
			return nil, err
		}
		in, err := inner("greedy")
		if err != nil {
			return nil, err
		}
		defer in.Close()
		return ctxpack.NewCountQuotaSlicer(in, sc, entries...)
	case "count_constrained_knapsack":
		entries, err1 := countEntries(cfg)
		sc, err2 := scarcity(cfg)
		if err := firstErr(err1, err2); err != nil {
			return nil, err
		}
		return ctxpack.NewCountConstrainedKnapsackSlicer(bucketSize(cfg), 0, sc, entries...)
	}
	return nil, fmt.Errorf("unknown slicer %q", name)
}

func buildPlacer(name string) (*ctxpack.Placer, error) {
	switch name {
	case "chronological":
		return ctxpack.NewChronologicalPlacer()
	case "u-shaped":
		return ctxpack.NewUShapedPlacer()
	}
	return nil, fmt.Errorf("unknown placer %q", name)
}

// buildPipeline assembles the pipeline of a vector's [config] (08 §6.4).
func buildPipeline(cfg table) (*ctxpack.Pipeline, error) {
	entries, _ := getTables(cfg, "scorers")
	var scorer *ctxpack.Scorer
	var err error
	switch len(entries) {
	case 0:
		return nil, errors.New("[[config.scorers]] is required")
	case 1:
		var name string
		if name, err = reqStr(entries[0], "type"); err == nil {
			scorer, err = buildScorer(name, entries[0])
		}
	default:
		scorer, err = compositeOf(entries)
	}
	if err != nil {
		return nil, err
	}
	defer scorer.Close()
	slicerName, err := reqStr(cfg, "slicer")
	if err != nil {
		return nil, err
	}
	slicer, err := buildSlicer(slicerName, cfg)
	if err != nil {
		return nil, err
	}
	defer slicer.Close()
	placerName, err := reqStr(cfg, "placer")
	if err != nil {
		return nil, err
	}
	placer, err := buildPlacer(placerName)
	if err != nil {
		return nil, err
	}
	defer placer.Close()
	strategies := map[string]ctxpack.OverflowStrategy{
		"": ctxpack.OverflowThrow, "throw": ctxpack.OverflowThrow,
		"truncate": ctxpack.OverflowTruncate, "proceed": ctxpack.OverflowProceed,
	}
	name, _ := getStr(cfg, "overflow_strategy")
	strategy, ok := strategies[name]
	if !ok {
		return nil, fmt.Errorf("unknown overflow_strategy %q", name)
	}
	value, err := groupValueOf(cfg)
	if err != nil {
		return nil, err
	}
	return ctxpack.NewPipeline(scorer, slicer, placer,
		ctxpack.WithDeduplication(getBool(cfg, "deduplication", true)),
		ctxpack.WithOverflowStrategy(strategy),
		ctxpack.WithGroupValue(value),
		ctxpack.WithPinnedFirst(getBool(cfg, "pinned_first", false)))
}

// groupValueOf reads [config] group_value (default sum).
func groupValueOf(cfg table) (ctxpack.GroupValue, error) {
	values := map[string]ctxpack.GroupValue{
		"": ctxpack.GroupValueSum, "sum": ctxpack.GroupValueSum,
		"max": ctxpack.GroupValueMax, "mean": ctxpack.GroupValueMean,
	}
	name, _ := getStr(cfg, "group_value")
	v, ok := values[name]
	if !ok {
		return 0, fmt.Errorf("unknown group_value %q", name)
	}
	return v, nil
}

// ---- running and comparing

func runPipelineVector(doc table) error {
	items, err := vectorItems(doc)
	if err != nil {
		return err
	}
	budget, err := vectorBudget(doc)
	if err != nil {
		return err
	}
	defer budget.Close()
	pipeline, err := buildPipeline(sub(doc, "config"))
	if err != nil {
		return err
	}
	defer pipeline.Close()

	result, err := pipeline.Run(items, budget, nil)
	if getBool(sub(doc, "test"), "expect_run_error", false) {
		if err == nil {
			return errors.New("the run succeeded, but the vector expects an error")
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("run failed: %v", err)
	}
	contentsOf := func(indices []int) []string {
		out := []string{}
		for _, i := range indices {
			out = append(out, items[i].Content)
		}
		return out
	}
	wantOutput := []string{}
	outputs, _ := getTables(doc, "expected_output")
	for _, e := range outputs {
		c, _ := getStr(e, "content")
		wantOutput = append(wantOutput, c)
	}
	if got := contentsOf(result.Indices); !reflect.DeepEqual(got, wantOutput) {
		return fmt.Errorf("output: expected %q, got %q", wantOutput, got)
	}

	expected := sub(doc, "expected")
	if over, ok := expected["overflow"].(table); ok {
		if err := checkOverflow(over, result.Overflow, contentsOf); err != nil {
			return err
		}
	}
	diag, ok := expected["diagnostics"].(table)
	if !ok {
		return nil
	}
	// A traced run must place the same items, and its report must match.
	traced, err := pipeline.Run(items, budget, &ctxpack.RunOptions{Trace: ctxpack.TraceItem})
	if err != nil {
		return fmt.Errorf("traced run failed: %v", err)
	}
	if !reflect.DeepEqual(traced.Indices, result.Indices) {
		return fmt.Errorf("traced run placed %v, untraced %v", traced.Indices, result.Indices)
	}
	eps := 1e-9
	if e, ok := getFloat(sub(doc, "tolerance"), "score_epsilon"); ok {
		eps = e
	}
	return checkReport(diag, traced.Report, items, eps)
}

func checkOverflow(want table, got *ctxpack.Overflow, contentsOf func([]int) []string) error {
	tokens, _ := getInt(want, "tokens_over_budget")
	if tokens == 0 {
		if got != nil {
			return fmt.Errorf("overflow: expected none, got %+v", *got)
		}
		return nil
	}
	if got == nil || got.TokensOverBudget != tokens {
		return fmt.Errorf("overflow: expected %d tokens over budget, got %+v", tokens, got)
	}
	if list, ok := want["overflowing_contents"].([]interface{}); ok {
		var wantContents []string
		for _, c := range list {
			wantContents = append(wantContents, c.(string))
		}
		if g := contentsOf(got.Items); !reflect.DeepEqual(g, wantContents) {
			return fmt.Errorf("overflow items: expected %q, got %q", wantContents, g)
		}
	}
	return nil
}

func checkReport(want table, r *ctxpack.Report, items []ctxpack.Item, eps float64) error {
	if r == nil {
		return errors.New("traced run has no report")
	}
	summary := sub(want, "summary")
	if n, ok := getInt(summary, "total_candidates"); ok && int(n) != r.TotalCandidates {
		return fmt.Errorf("total_candidates: expected %d, got %d", n, r.TotalCandidates)
	}
	if n, ok := getInt(summary, "total_tokens_considered"); ok && n != r.TotalTokensConsidered {
		return fmt.Errorf("total_tokens_considered: expected %d, got %d", n, r.TotalTokensConsidered)
	}
	scoreOK := func(got, want float64) bool { return math.Abs(got-want) < eps }

	if included, ok := getTables(want, "included"); ok {
		if len(included) != len(r.Included) {
			return fmt.Errorf("included: expected %d entries, got %d", len(included), len(r.Included))
		}
		for k, e := range included {
			got := r.Included[k]
			content, _ := getStr(e, "content")
			if items[got.Index].Content != content {
				return fmt.Errorf("included[%d]: expected %q, got %q", k, content, items[got.Index].Content)
			}
			if s, ok := getFloat(e, "score_approx"); ok && !scoreOK(got.Score, s) {
				return fmt.Errorf("included[%d] (%s): score %v, expected %v (eps %g)", k, content, got.Score, s, eps)
			}
			if reason, ok := getStr(e, "inclusion_reason"); ok && reason != got.Reason.String() {
				return fmt.Errorf("included[%d] (%s): reason %s, expected %s", k, content, got.Reason, reason)
			}
		}
	}
	if excluded, ok := getTables(want, "excluded"); ok {
		if len(excluded) != len(r.Excluded) {
			return fmt.Errorf("excluded: expected %d entries, got %d", len(excluded), len(r.Excluded))
		}
		for k, e := range excluded {
			got := r.Excluded[k]
			content, _ := getStr(e, "content")
			if items[got.Index].Content != content {
				return fmt.Errorf("excluded[%d]: expected %q, got %q", k, content, items[got.Index].Content)
			}
			if s, ok := getFloat(e, "score_approx"); ok && !scoreOK(got.Score, s) {
				return fmt.Errorf("excluded[%d] (%s): score %v, expected %v (eps %g)", k, content, got.Score, s, eps)
			}
			if reason, _ := getStr(e, "exclusion_reason"); reason != got.Name {
				return fmt.Errorf("excluded[%d] (%s): reason %s, expected %s", k, content, got.Name, reason)
			}
			for _, field := range reasonFields[got.Name] {
				wantValue, present := e[field]
				if !present {
					continue
				}
				gotValue := excludedField(got, field)
				if !fieldMatches(wantValue, gotValue, eps) {
					return fmt.Errorf("excluded[%d] (%s).%s: expected %v, got %v", k, content, field, wantValue, gotValue)
				}
			}
		}
	}
	if shortfalls, ok := getTables(want, "shortfalls"); ok {
		var wantS []ctxpack.Shortfall
		for _, s := range shortfalls {
			kind, _ := getStr(s, "kind")
			req, _ := getInt(s, "required_count")
			sat, _ := getInt(s, "satisfied_count")
			wantS = append(wantS, ctxpack.Shortfall{Kind: kind, RequiredCount: uint64(req), SatisfiedCount: uint64(sat)})
		}
		if len(wantS) != len(r.Shortfalls) || (len(wantS) > 0 && !reflect.DeepEqual(wantS, r.Shortfalls)) {
			return fmt.Errorf("shortfalls: expected %+v, got %+v", wantS, r.Shortfalls)
		}
	}
	if groups, ok := getTables(want, "groups"); ok {
		if err := checkGroups(groups, r.Groups, items); err != nil {
			return err
		}
	}
	return nil
}

// checkGroups compares the report's group list with [[expected.diagnostics.groups]]:
// key, members (contents) and decision always; tokens, stage, member (content of the
// member whose exclusion took the group out), pinned_by (content) and
// partial_selection when the vector gives them.
func checkGroups(want []table, got []ctxpack.GroupEntry, items []ctxpack.Item) error {
	if len(want) != len(got) {
		return fmt.Errorf("groups: expected %d, got %d", len(want), len(got))
	}
	for k, w := range want {
		g := got[k]
		key, _ := getStr(w, "key")
		if key != g.Key {
			return fmt.Errorf("groups[%d]: key %q, expected %q", k, g.Key, key)
		}
		var members []string
		for _, i := range g.Members {
			members = append(members, items[i].Content)
		}
		var wantMembers []string
		list, _ := w["members"].([]interface{})
		for _, m := range list {
			wantMembers = append(wantMembers, m.(string))
		}
		if !reflect.DeepEqual(members, wantMembers) {
			return fmt.Errorf("groups[%d] (%s): members %q, expected %q", k, key, members, wantMembers)
		}
		if d, _ := getStr(w, "decision"); d != g.Decision.String() {
			return fmt.Errorf("groups[%d] (%s): decision %s, expected %s", k, key, g.Decision, d)
		}
		if n, ok := getInt(w, "tokens"); ok && n != g.Tokens {
			return fmt.Errorf("groups[%d] (%s): tokens %d, expected %d", k, key, g.Tokens, n)
		}
		excluded := g.Decision == ctxpack.GroupExcluded
		if s, ok := getStr(w, "stage"); ok && (!excluded || s != g.Stage.String()) {
			return fmt.Errorf("groups[%d] (%s): stage %s (decision %s), expected %s", k, key, g.Stage, g.Decision, s)
		}
		if m, ok := getStr(w, "member"); ok && (!excluded || m != items[g.MemberIndex].Content) {
			return fmt.Errorf("groups[%d] (%s): member %q (decision %s), expected %q", k, key, items[g.MemberIndex].Content, g.Decision, m)
		}
		if p, ok := getStr(w, "pinned_by"); ok && (g.PinnedBy == nil || p != items[*g.PinnedBy].Content) {
			return fmt.Errorf("groups[%d] (%s): pinned_by %v, expected %q", k, key, g.PinnedBy, p)
		}
		if p := getBool(w, "partial_selection", false); p != g.PartialSelection {
			return fmt.Errorf("groups[%d] (%s): partial_selection %v, expected %v", k, key, g.PartialSelection, p)
		}
	}
	return nil
}

// reasonFields are the wire fields of each exclusion reason (spec 06 §7.1); other keys
// of an excluded entry are ignored, as unknown keys are.
var reasonFields = map[string][]string{
	"BudgetExceeded":                  {"item_tokens", "available_tokens"},
	"ScoredTooLow":                    {"score", "threshold"},
	"Deduplicated":                    {"deduplicated_against"},
	"QuotaCapExceeded":                {"kind", "cap", "actual"},
	"QuotaRequireDisplaced":           {"displaced_by_kind"},
	"NegativeTokens":                  {"tokens"},
	"PinnedOverride":                  {"displaced_by"},
	"Filtered":                        {"filter_name"},
	"CountCapExceeded":                {"kind", "cap", "count"},
	"CountRequireCandidatesExhausted": {"kind"},
	"GroupExcluded":                   {"group", "member_index", "member_content", "member_reason"},
}

func excludedField(e ctxpack.ExcludedEntry, field string) interface{} {
	switch field {
	case "item_tokens":
		return e.ItemTokens
	case "available_tokens":
		return e.AvailableTokens
	case "score":
		return e.ReasonScore
	case "threshold":
		return e.Threshold
	case "deduplicated_against":
		return e.DeduplicatedAgainst
	case "kind":
		return e.Kind
	case "cap":
		if e.Reason == ctxpack.ExclusionCountCapExceeded {
			return int64(e.CountCap)
		}
		return e.Cap
	case "actual":
		return e.Actual
	case "count":
		return int64(e.Count)
	case "displaced_by_kind":
		return e.DisplacedByKind
	case "tokens":
		return e.Tokens
	case "displaced_by":
		return e.DisplacedBy
	case "filter_name":
		return e.FilterName
	case "group":
		return e.Group
	case "member_index":
		return int64(e.MemberIndex)
	case "member_content":
		return e.MemberContent
	case "member_reason":
		return e.MemberReason
	}
	return nil
}

// fieldMatches compares integers and strings exactly, and a float on either side by the
// score tolerance.
func fieldMatches(want, got interface{}, eps float64) bool {
	asFloat := func(v interface{}) (float64, bool) {
		switch x := v.(type) {
		case int64:
			return float64(x), true
		case float64:
			return x, true
		}
		return 0, false
	}
	_, wantInt := want.(int64)
	_, gotInt := got.(int64)
	if wantInt && gotInt {
		return want == got
	}
	if w, ok := asFloat(want); ok {
		g, ok := asFloat(got)
		return ok && math.Abs(g-w) < eps
	}
	return want == got
}

// ---- one stage alone

func epsilonOf(doc table) float64 {
	if e, ok := getFloat(sub(doc, "tolerance"), "score_epsilon"); ok {
		return e
	}
	return 1e-9
}

// scoresAt reads the `score` of each entry of an item array.
func scoresAt(doc table, key string) ([]float64, error) {
	entries, _ := getTables(doc, key)
	scores := make([]float64, len(entries))
	for i, e := range entries {
		s, err := reqFloat(e, "score")
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %v", key, i, err)
		}
		scores[i] = s
	}
	return scores, nil
}

// constructionError handles expect_construction_error: building must fail.
func constructionError(doc table, build func() (closer, error)) (done bool, err error) {
	if !getBool(sub(doc, "test"), "expect_construction_error", false) {
		return false, nil
	}
	c, err := build()
	if err == nil {
		c.Close()
		return true, errors.New("construction succeeded, but the vector expects an error")
	}
	return true, nil
}

func runScoringVector(doc table) error {
	name, err := reqStr(sub(doc, "test"), "scorer")
	if err != nil {
		return err
	}
	cfg := sub(doc, "config")
	build := func() (closer, error) { return buildScorer(name, cfg) }
	if done, err := constructionError(doc, build); done {
		return err
	}
	items, err := vectorItems(doc)
	if err != nil {
		return err
	}
	scorer, err := buildScorer(name, cfg)
	if err != nil {
		return err
	}
	defer scorer.Close()
	scores, err := scorer.Score(items)
	if err != nil {
		return err
	}
	expected, _ := getTables(doc, "expected")
	if len(expected) != len(items) {
		return fmt.Errorf("%d expectations for %d items", len(expected), len(items))
	}
	eps := epsilonOf(doc)
	for _, e := range expected {
		content, _ := getStr(e, "content")
		want, err := reqFloat(e, "score_approx")
		if err != nil {
			return err
		}
		found := false
		for i, it := range items {
			if it.Content == content {
				found = true
				if math.Abs(scores[i]-want) >= eps {
					return fmt.Errorf("%s: score %v, expected %v (eps %g)", content, scores[i], want, eps)
				}
			}
		}
		if !found {
			return fmt.Errorf("no item %q", content)
		}
	}
	return nil
}

func runSlicingVector(doc table) error {
	name, err := reqStr(sub(doc, "test"), "slicer")
	if err != nil {
		return err
	}
	cfg := sub(doc, "config")
	build := func() (closer, error) { return buildSlicer(name, cfg) }
	if done, err := constructionError(doc, build); done {
		return err
	}
	items, err := itemsAt(doc, "scored_items")
	if err != nil {
		return err
	}
	scores, err := scoresAt(doc, "scored_items")
	if err != nil {
		return err
	}
	b := sub(doc, "budget")
	target, ok := getInt(b, "target_tokens")
	if !ok {
		return errors.New("[budget] needs target_tokens")
	}
	max, ok := getInt(b, "max_tokens")
	if !ok {
		max = target
	}
	budget, err := ctxpack.NewBudget(max, target)
	if err != nil {
		return err
	}
	defer budget.Close()
	slicer, err := buildSlicer(name, cfg)
	if err != nil {
		return err
	}
	defer slicer.Close()
	value, err := groupValueOf(cfg)
	if err != nil {
		return err
	}
	res, err := slicer.SliceWithGroupValue(items, scores, budget, value)
	if getBool(sub(doc, "test"), "expect_run_error", false) {
		if err == nil {
			return errors.New("the slice succeeded, but the vector expects an error")
		}
		return nil
	}
	if err != nil {
		return err
	}
	expected := sub(doc, "expected")
	var want, got []string
	if list, ok := expected["selected_contents"].([]interface{}); ok {
		for _, c := range list {
			want = append(want, c.(string))
		}
	} else {
		return errors.New("missing expected.selected_contents")
	}
	for _, i := range res.Selected {
		got = append(got, items[i].Content)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, "\x00") != strings.Join(got, "\x00") {
		return fmt.Errorf("selected %q, expected %q", got, want)
	}
	if n, ok := getInt(expected, "shortfall_count"); ok && int(n) != len(res.Shortfalls) {
		return fmt.Errorf("%d shortfalls, expected %d", len(res.Shortfalls), n)
	}
	if n, ok := getInt(expected, "cap_excluded_count"); ok && int(n) != len(res.CapExcluded) {
		return fmt.Errorf("%d cap exclusions, expected %d", len(res.CapExcluded), n)
	}
	return nil
}

func runPlacingVector(doc table) error {
	name, ok := getStr(sub(doc, "test"), "placer")
	if !ok {
		name, ok = getStr(sub(doc, "config"), "placer")
	}
	if !ok {
		return errors.New("missing [test].placer")
	}
	items, err := vectorItems(doc)
	if err != nil {
		return err
	}
	scores, err := scoresAt(doc, "items")
	if err != nil {
		return err
	}
	placer, err := buildPlacer(name)
	if err != nil {
		return err
	}
	defer placer.Close()
	value, err := groupValueOf(sub(doc, "config"))
	if err != nil {
		return err
	}
	order, err := placer.PlaceWithGroupValue(items, scores, value)
	if err != nil {
		return err
	}
	var want, got []string
	list, _ := sub(doc, "expected")["ordered_contents"].([]interface{})
	for _, c := range list {
		want = append(want, c.(string))
	}
	for _, i := range order {
		got = append(got, items[i].Content)
	}
	if !reflect.DeepEqual(want, got) && !(len(want) == 0 && len(got) == 0) {
		return fmt.Errorf("order %q, expected %q", got, want)
	}
	return nil
}
