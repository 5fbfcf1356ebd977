// Reproduces pipeline conformance vectors through ctxpack.hpp: every `*.toml` of the
// folders given on the command line (bindings/cpp/run.sh passes the shared Cupel
// pipeline vectors and the project's own) is read with toml.hpp, its components built
// with the wrapper, run, and compared with the vector's expectations (format:
// shared/spec/08-conformance-format.md, §6.4 and §7.4–7.5; plus the project runner's
// extensions `expect_run_error`, `[expected.overflow]`, shortfalls, reserved slots and
// the safety margin, documented at the top of tests/conformance.rs). Expected values
// come only from the vector files. One test per vector, plus one that fails when fewer
// than three vectors ran.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "check.hpp"
#include "ctxpack.hpp"
#include "toml.hpp"

using namespace ctxpack;

namespace {

// ---------------------------------------------------------------- building from a vector

Item to_item(const toml::Value &t) {
    Item item{t.at("content").as_string(), t.at("tokens").as_int(), t.get_string("kind"), t.get_string("source")};
    if (const auto *v = t.find("priority")) item.priority = v->as_int();
    for (const toml::Value &tag : t.list("tags")) item.tags.push_back(tag.as_string());
    if (const auto *m = t.find("metadata")) {
        for (const auto &[key, value] : m->table) {
            if (value.type == toml::Value::Type::String) item.metadata.emplace_back(key, value.string);
        }
    }
    if (const auto *v = t.find("timestamp")) item.timestamp_ns = v->as_datetime_ns();
    if (const auto *v = t.find("futureRelevanceHint")) item.future_relevance_hint = v->as_double();
    item.pinned = t.get_bool("pinned", false);
    if (const auto *v = t.find("original_tokens")) item.original_tokens = v->as_int();
    item.group = t.get_string("group");
    return item;
}

Budget to_budget(const toml::Value &b) {
    std::vector<ReservedSlot> slots;
    if (const auto *r = b.find("reserved_slots")) {
        for (const auto &[kind, count] : r->table) slots.push_back({kind, count.as_int()});
    }
    return Budget(b.at("max_tokens").as_int(), b.at("target_tokens").as_int(), b.get_int("output_reserve", 0), slots,
                  b.get_double("estimation_safety_margin_percent", 0.0));
}

std::chrono::nanoseconds seconds(double s) { return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(s * 1e9))); }

Scorer to_scorer(const toml::Value &config);

// A scorer named by a string (built without configuration) or given as a table with
// `type` that is also its configuration.
Scorer named_scorer(const toml::Value &v) {
    if (v.type == toml::Value::Type::String) {
        toml::Value config;
        config.table.emplace_back("type", v);
        return to_scorer(config);
    }
    return to_scorer(v);
}

// A composite of (child, weight) entries: each entry is its scorer's configuration.
Scorer composite_of(const toml::Array &entries) {
    std::vector<Scorer> children;
    for (const toml::Value &entry : entries) children.push_back(to_scorer(entry));
    std::vector<WeightedScorer> weighted;
    for (std::size_t i = 0; i < children.size(); i++) {
        weighted.push_back({children[i], entries[i].at("weight").as_double()});
    }
    return Scorer::composite(weighted);
}

Scorer to_scorer(const toml::Value &config) {
    const std::string type = config.at("type").as_string();
    if (type == "recency") return Scorer::recency();
    if (type == "priority") return Scorer::priority();
    if (type == "frequency") return Scorer::frequency();
    if (type == "reflexive") return Scorer::reflexive();
    if (type == "kind") {
        if (config.get_bool("use_default_weights", false) || !config.find("weights")) return Scorer::kind();
        std::vector<KindWeight> weights;
        for (const toml::Value &w : config.list("weights")) {
            weights.push_back({w.at("kind").as_string(), w.at("weight").as_double()});
        }
        return Scorer::kind(weights);
    }
    if (type == "tag") {
        std::vector<TagWeight> weights;
        for (const toml::Value &w : config.list("tag_weights")) {
            weights.push_back({w.at("tag").as_string(), w.at("weight").as_double()});
        }
        return Scorer::tag(weights);
    }
    if (type == "composite") return composite_of(config.list("children"));
    if (type == "scaled") return Scorer::scaled(named_scorer(config.at("inner_scorer")));
    if (type == "metadata_trust") return Scorer::metadata_trust(config.get_double("default_score", 0.5));
    if (type == "metadata_key") {
        return Scorer::metadata_key(config.at("key").as_string(), config.at("value").as_string(),
                                    config.at("boost").as_double());
    }
    if (type == "decay") {
        const toml::Value &curve = config.at("curve");
        const std::string kind = curve.at("type").as_string();
        DecayConfig decay;
        if (kind == "exponential") {
            decay = DecayConfig::exponential(seconds(curve.at("half_life_secs").as_double()));
        } else if (kind == "window") {
            decay = DecayConfig::window(seconds(curve.at("max_age_secs").as_double()));
        } else if (kind == "step") {
            std::vector<DecayWindow> windows;
            for (const toml::Value &w : curve.list("windows")) {
                windows.push_back({seconds(w.at("max_age_secs").as_double()), w.at("score").as_double()});
            }
            decay = DecayConfig::step(windows);
        } else {
            throw std::runtime_error("unknown decay curve " + kind);
        }
        decay.fixed_now_ns = config.at("reference_time").as_datetime_ns();
        if (const auto *n = config.find("null_timestamp_score")) decay.null_timestamp_score = n->as_double();
        return Scorer::decay(decay);
    }
    throw std::runtime_error("unknown scorer " + type);
}

// 08 §6.4: one entry is the scorer itself, more make a composite.
Scorer pipeline_scorer(const toml::Value &config) {
    const toml::Array &entries = config.list("scorers");
    if (entries.size() == 1) return to_scorer(entries[0]);
    return composite_of(entries);
}

Slicer to_slicer(const std::string &name, const toml::Value &config);

Slicer inner_slicer(const toml::Value &config, const char *fallback) {
    const toml::Value *inner = config.find("inner_slicer");
    if (inner == nullptr) {
        if (fallback == nullptr) throw std::runtime_error("missing key 'inner_slicer'");
        return to_slicer(fallback, toml::Value{});
    }
    if (inner->type == toml::Value::Type::String) return to_slicer(inner->string, toml::Value{});
    return to_slicer(inner->at("type").as_string(), *inner);
}

std::vector<CountQuotaEntry> count_entries(const toml::Value &config) {
    std::vector<CountQuotaEntry> entries;
    for (const toml::Value &e : config.list("entries")) {
        entries.push_back({e.at("kind").as_string(), static_cast<std::size_t>(e.at("require_count").as_int()),
                           static_cast<std::size_t>(e.at("cap_count").as_int())});
    }
    return entries;
}

Scarcity scarcity(const toml::Value &config) {
    std::string s = config.get_string("scarcity_behavior", "degrade");
    if (s == "degrade") return Scarcity::Degrade;
    if (s == "throw") return Scarcity::Throw;
    throw std::runtime_error("unknown scarcity_behavior " + s);
}

Slicer to_slicer(const std::string &name, const toml::Value &config) {
    const int64_t bucket = config.get_int("bucket_size", CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE);
    if (name == "greedy") return Slicer::greedy();
    if (name == "knapsack") return Slicer::knapsack(bucket);
    if (name == "quota") {
        std::vector<QuotaEntry> quotas;
        for (const toml::Value &q : config.list("quotas")) {
            quotas.push_back({q.at("kind").as_string(), q.at("require").as_double(), q.at("cap").as_double()});
        }
        return Slicer::quota(quotas, inner_slicer(config, nullptr));
    }
    if (name == "count_quota") {
        return Slicer::count_quota(count_entries(config), inner_slicer(config, "greedy"), scarcity(config));
    }
    if (name == "count_constrained_knapsack") {
        return Slicer::count_constrained_knapsack(count_entries(config), bucket, 0, scarcity(config));
    }
    throw std::runtime_error("unknown slicer " + name);
}

Placer to_placer(const std::string &name) {
    if (name == "chronological") return Placer::chronological();
    if (name == "u-shaped") return Placer::u_shaped();
    throw std::runtime_error("unknown placer " + name);
}

PipelineOptions to_options(const toml::Value &config) {
    PipelineOptions options;
    options.deduplication = config.get_bool("deduplication", true);
    std::string strategy = config.get_string("overflow_strategy", "throw");
    if (strategy == "throw") {
        options.overflow_strategy = OverflowStrategy::Throw;
    } else if (strategy == "truncate") {
        options.overflow_strategy = OverflowStrategy::Truncate;
    } else if (strategy == "proceed") {
        options.overflow_strategy = OverflowStrategy::Proceed;
    } else {
        throw std::runtime_error("unknown overflow_strategy " + strategy);
    }
    std::string value = config.get_string("group_value", "sum");
    if (value == "sum") {
        options.group_value = GroupValue::Sum;
    } else if (value == "max") {
        options.group_value = GroupValue::Max;
    } else if (value == "mean") {
        options.group_value = GroupValue::Mean;
    } else {
        throw std::runtime_error("unknown group_value " + value);
    }
    options.pinned_first = config.get_bool("pinned_first", false);
    return options;
}

// ---------------------------------------------------------------- comparing

std::string join(const std::vector<std::string> &v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); i++) out += (i ? ", " : "") + v[i];
    return out + "]";
}

const char *inclusion_name(InclusionReason r) {
    switch (r) {
    case InclusionReason::Scored: return "Scored";
    case InclusionReason::Pinned: return "Pinned";
    case InclusionReason::ZeroToken: return "ZeroToken";
    case InclusionReason::Downgraded: return "Downgraded";
    }
    return "?";
}

class VectorCheck {
public:
    explicit VectorCheck(const std::string &path) : path_(path), v_(toml::parse_file(path)) {}

    void run() {
        const toml::Value &test = v_.at("test");
        if (test.at("stage").as_string() != "pipeline") throw std::runtime_error("not a pipeline vector");
        for (const toml::Value &t : v_.list("items")) {
            items_.push_back(to_item(t));
            contents_.push_back(items_.back().content);
        }
        const toml::Value &config = v_.at("config");
        Items items(items_);
        Budget budget = to_budget(v_.at("budget"));
        Pipeline pipeline(pipeline_scorer(config), to_slicer(config.at("slicer").as_string(), config),
                          to_placer(config.at("placer").as_string()), to_options(config));
        if (const auto *tolerance = v_.find("tolerance")) eps_ = tolerance->get_double("score_epsilon", eps_);

        if (test.get_bool("expect_run_error", false)) {
            try {
                pipeline.run(items, budget);
                fail("the run succeeded; the vector expects an error");
            } catch (const Error &) {
            }
            return;
        }

        // The output comes from an untraced run, observed through the overflow callback too.
        std::optional<std::pair<int64_t, std::vector<std::size_t>>> observed;
        RunOptions options;
        options.on_overflow = [&](int64_t over, Span<const std::size_t> merged) {
            observed.emplace(over, merged.to_vector());
        };
        Result result = pipeline.run(items, budget, options);
        std::vector<std::string> expected;
        for (const toml::Value &e : v_.list("expected_output")) expected.push_back(e.at("content").as_string());
        compare("output", names(result.indices()), expected);

        const toml::Value *expectations = v_.find("expected");
        if (expectations == nullptr) return;
        if (const auto *overflow = expectations->find("overflow")) check_overflow(result, observed, *overflow);
        if (const auto *diagnostics = expectations->find("diagnostics")) {
            Result traced = pipeline.run(items, budget, {TraceDetail::Item});
            compare("traced output", names(traced.indices()), names(result.indices()));
            check_diagnostics(traced, *diagnostics);
        }
    }

private:
    std::string path_;
    toml::Value v_;
    std::vector<Item> items_;
    std::vector<std::string> contents_;
    double eps_ = 1e-9;

    void fail(const std::string &what) const { check::failures().push_back(path_ + ": " + what); }

    std::vector<std::string> names(Span<const std::size_t> indices) const {
        std::vector<std::string> out;
        for (std::size_t i : indices) out.push_back(contents_.at(i));
        return out;
    }
    void compare(const std::string &what, const std::vector<std::string> &got,
                 const std::vector<std::string> &expected) const {
        if (got != expected) fail(what + ": got " + join(got) + ", expected " + join(expected));
    }
    void compare_score(const std::string &what, double got, double expected) const {
        if (!(std::fabs(got - expected) < eps_)) {
            fail(what + ": got " + std::to_string(got) + ", expected " + std::to_string(expected));
        }
    }
    template <typename T>
    void compare_exact(const std::string &what, const T &got, const T &expected) const {
        if (!(got == expected)) fail(what + ": got " + check::show(got) + ", expected " + check::show(expected));
    }

    void check_overflow(const Result &result,
                        const std::optional<std::pair<int64_t, std::vector<std::size_t>>> &observed,
                        const toml::Value &expected) const {
        const int64_t tokens = expected.at("tokens_over_budget").as_int();
        std::optional<Overflow> overflow = result.overflow();
        if (tokens == 0) {
            if (overflow || observed) fail("overflow: an event was produced, none expected");
            return;
        }
        if (!overflow || !observed) {
            fail("overflow: no event, expected one");
            return;
        }
        compare_exact("overflow tokens", overflow->tokens_over_budget, tokens);
        compare_exact("overflow tokens (callback)", observed->first, tokens);
        compare_exact("overflow items (callback)", join(names(overflow->items)),
                      join(names(Span<const std::size_t>(observed->second.data(), observed->second.size()))));
        if (const auto *contents = expected.find("overflowing_contents")) {
            std::vector<std::string> want;
            for (const toml::Value &c : contents->as_array()) want.push_back(c.as_string());
            compare("overflowing contents", names(overflow->items), want);
        }
    }

    void check_diagnostics(const Result &r, const toml::Value &expected) const {
        if (const auto *summary = expected.find("summary")) {
            ReportSummary s = r.summary();
            if (const auto *n = summary->find("total_candidates")) {
                compare_exact("total_candidates", static_cast<int64_t>(s.total_candidates), n->as_int());
            }
            if (const auto *n = summary->find("total_tokens_considered")) {
                compare_exact("total_tokens_considered", s.total_tokens_considered, n->as_int());
            }
        }
        if (const auto *included = expected.find("included")) check_included(r.included(), included->as_array());
        if (const auto *excluded = expected.find("excluded")) check_excluded(r.excluded(), excluded->as_array());
        if (const auto *shortfalls = expected.find("shortfalls")) {
            std::vector<Shortfall> got = r.shortfalls();
            const toml::Array &want = shortfalls->as_array();
            compare_exact("shortfall count", got.size(), want.size());
            for (std::size_t i = 0; i < std::min(got.size(), want.size()); i++) {
                compare_exact("shortfall kind", got[i].kind, want[i].at("kind").as_string());
                compare_exact("shortfall required_count", static_cast<int64_t>(got[i].required_count),
                              want[i].at("required_count").as_int());
                compare_exact("shortfall satisfied_count", static_cast<int64_t>(got[i].satisfied_count),
                              want[i].at("satisfied_count").as_int());
            }
        }
        if (const auto *groups = expected.find("groups")) check_groups(r.groups(), groups->as_array());
    }

    // The group listing: key, members (contents) and decision always; tokens, stage,
    // member, pinned_by and partial_selection when the vector gives them.
    void check_groups(const std::vector<GroupEntry> &got, const toml::Array &want) const {
        compare_exact("group count", got.size(), want.size());
        for (std::size_t i = 0; i < std::min(got.size(), want.size()); i++) {
            const GroupEntry &g = got[i];
            const toml::Value &w = want[i];
            const std::string at = "groups[" + std::to_string(i) + "] ";
            compare_exact(at + "key", g.key, w.at("key").as_string());
            std::vector<std::string> want_members;
            for (const toml::Value &m : w.list("members")) want_members.push_back(m.as_string());
            compare(at + "members", names(Span<const std::size_t>(g.members.data(), g.members.size())),
                    want_members);
            const bool excluded = g.decision == GroupDecision::Excluded;
            compare_exact(at + "decision", std::string(excluded ? "Excluded" : "Included"),
                          w.at("decision").as_string());
            if (const auto *n = w.find("tokens")) compare_exact(at + "tokens", g.tokens, n->as_int());
            if (const auto *st = w.find("stage")) {
                static const char *const stages[] = {"Classify", "Score", "Deduplicate", "Slice", "Place"};
                const auto k = static_cast<std::size_t>(g.stage);
                compare_exact(at + "stage", std::string(excluded && k < 5 ? stages[k] : "(none)"), st->as_string());
            }
            if (const auto *m = w.find("member")) {
                compare_exact(at + "member", excluded ? contents_.at(g.member_index) : std::string("(none)"),
                              m->as_string());
            }
            if (const auto *p = w.find("pinned_by")) {
                compare_exact(at + "pinned_by", g.pinned_by ? contents_.at(*g.pinned_by) : std::string("(none)"),
                              p->as_string());
            }
            compare_exact(at + "partial_selection", g.partial_selection, w.get_bool("partial_selection", false));
        }
    }

    void check_included(const std::vector<IncludedEntry> &got, const toml::Array &want) const {
        compare_exact("included count", got.size(), want.size());
        for (std::size_t i = 0; i < std::min(got.size(), want.size()); i++) {
            const std::string at = "included[" + std::to_string(i) + "] ";
            compare_exact(at + "content", contents_.at(got[i].index), want[i].at("content").as_string());
            compare_score(at + "score", got[i].score, want[i].at("score_approx").as_double());
            compare_exact(at + "reason", std::string(inclusion_name(got[i].reason)),
                          want[i].at("inclusion_reason").as_string());
        }
    }

    void check_excluded(const std::vector<ExcludedEntry> &got, const toml::Array &want) const {
        compare_exact("excluded count", got.size(), want.size());
        for (std::size_t i = 0; i < std::min(got.size(), want.size()); i++) {
            const ExcludedEntry &e = got[i];
            const std::string at = "excluded[" + std::to_string(i) + "] ";
            compare_exact(at + "content", contents_.at(e.index), want[i].at("content").as_string());
            compare_score(at + "score", e.score, want[i].at("score_approx").as_double());
            compare_exact(at + "reason", e.name, want[i].at("exclusion_reason").as_string());
            // The reason's own fields: TOML names are the wire names (08 §7.5).
            for (const auto &[key, value] : want[i].table) {
                if (key == "content" || key == "score_approx" || key == "exclusion_reason") continue;
                const std::string field = at + key;
                if (key == "tokens") {
                    compare_exact(field, e.tokens, value.as_int());
                } else if (key == "item_tokens") {
                    compare_exact(field, e.item_tokens, value.as_int());
                } else if (key == "available_tokens") {
                    compare_exact(field, e.available_tokens, value.as_int());
                } else if (key == "cap") {  // QuotaCapExceeded's cap, CountCapExceeded's count cap
                    int64_t cap = e.reason == ExclusionReason::CountCapExceeded ? static_cast<int64_t>(e.count_cap) : e.cap;
                    compare_exact(field, cap, value.as_int());
                } else if (key == "count") {
                    compare_exact(field, static_cast<int64_t>(e.count), value.as_int());
                } else if (key == "actual") {
                    compare_exact(field, e.actual, value.as_int());
                } else if (key == "score") {  // ScoredTooLow
                    compare_score(field, e.reason_score, value.as_double());
                } else if (key == "threshold") {
                    compare_score(field, e.threshold, value.as_double());
                } else if (key == "deduplicated_against") {
                    compare_exact(field, e.deduplicated_against, value.as_string());
                } else if (key == "displaced_by") {
                    compare_exact(field, e.displaced_by, value.as_string());
                } else if (key == "displaced_by_kind") {
                    compare_exact(field, e.displaced_by_kind, value.as_string());
                } else if (key == "kind") {
                    compare_exact(field, e.kind, value.as_string());
                } else if (key == "filter_name") {
                    compare_exact(field, e.filter_name, value.as_string());
                } else if (key == "group") {
                    compare_exact(field, e.group, value.as_string());
                } else if (key == "member_index") {
                    compare_exact(field, static_cast<int64_t>(e.member_index), value.as_int());
                } else if (key == "member_content") {
                    compare_exact(field, e.member_content, value.as_string());
                } else if (key == "member_reason") {
                    compare_exact(field, e.member_reason, value.as_string());
                } else {
                    fail(field + ": a field this runner does not know");
                }
            }
        }
    }
};

}  // namespace

int main(int argc, char **argv) {
    namespace fs = std::filesystem;
    std::size_t vectors = 0;
    for (int a = 1; a < argc; a++) {
        const fs::path dir = argv[a];
        if (dir.extension() == ".toml" && fs::is_regular_file(dir)) {  // one vector file
            const std::string file = dir.string();
            check::add(file, [file] { VectorCheck(file).run(); });
            vectors++;
            continue;
        }
        if (!fs::is_directory(dir)) {
            check::add("missing vector folder " + dir.string(), [] { check::fail(__FILE__, __LINE__, "not a folder"); });
            continue;
        }
        std::vector<std::string> files;
        for (const auto &entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() == ".toml") files.push_back(entry.path().string());
        }
        std::sort(files.begin(), files.end());
        for (const std::string &file : files) {
            check::add(file, [file] { VectorCheck(file).run(); });
            vectors++;
        }
    }
    check::add("at least three vectors ran", [vectors] {
        if (vectors < 3) check::fail(__FILE__, __LINE__, "only " + std::to_string(vectors) + " vectors found");
    });
    return check::run_all();
}
