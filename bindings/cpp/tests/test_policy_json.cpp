// Tests of the policy and budget JSON part of ctxpack.hpp against the real library:
// lenient reads with their warnings, strict reads, the .NET reading rules, a scorer
// registry whose C++ lambda scorer runs when a policy names it (its state destroyed
// exactly once, after the last holder), and budget JSON round trips in .NET's form.
// Built and run by bindings/cpp/run.sh, plain and under ASan+UBSan.
#include <atomic>
#include <string>
#include <vector>

#include "check.hpp"
#include "ctxpack.hpp"

using namespace ctxpack;

namespace {

constexpr int64_t kDay = INT64_C(86400000000000);
constexpr int64_t kJan2024 = INT64_C(1704067200) * 1000000000;

Item dated(std::string content, int64_t tokens, int day) {
    Item item{std::move(content), tokens, ""};
    item.timestamp_ns = kJan2024 + day * kDay;
    return item;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// The message of the ctxpack::Error `f` throws ("" and a failed check if none).
template <typename F>
std::string error_of(F &&f, Status expected) {
    try {
        f();
    } catch (const Error &e) {
        CHECK(e.status() == expected);
        return std::string(e.message());
    }
    CHECK(!"no ctxpack::Error thrown");
    return "";
}

// Counts the live copies of a lambda's captured state.
struct Tracker {
    std::atomic<int> *alive;
    explicit Tracker(std::atomic<int> *a) : alive(a) { ++*alive; }
    Tracker(const Tracker &o) : alive(o.alive) { ++*alive; }
    Tracker &operator=(const Tracker &) = delete;
    ~Tracker() { --*alive; }
};

const char *const kPolicyWithTypo = R"({"scorers": [{"type": "recency", "weight": 1, "wieght": 2}], "futureOption": true})";

}  // namespace

TEST(lenient_read_returns_warnings) {
    std::vector<JsonWarning> warnings;
    Pipeline p = Pipeline::from_policy_json(kPolicyWithTypo, JsonReadOptions{}, &warnings);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0].kind == JsonWarningKind::UnknownProperty);
    CHECK_EQ(warnings[0].path, std::string("futureOption"));
    CHECK_EQ(warnings[0].message, std::string("unknown property; ignored"));
    CHECK_EQ(warnings[0].text, std::string("futureOption: unknown property; ignored"));
    CHECK(warnings[1].kind == JsonWarningKind::UnknownProperty);
    CHECK_EQ(warnings[1].text, std::string("scorers[0].wieght: unknown property; ignored"));
    Result r = p.run(Items({dated("a", 1, 0)}), Budget(10, 10));
    CHECK(r.indices().size() == 1);
    // Warnings may be ignored; a clean document has none, even read strictly.
    Pipeline::from_policy_json(kPolicyWithTypo, JsonReadOptions{});
    Pipeline::from_policy_json(R"({"scorers": [{"type": "recency", "weight": 1}]})", JsonReadOptions{true, nullptr},
                               &warnings);
    CHECK(warnings.empty());
}

TEST(strict_read_fails) {
    std::string m = error_of([] { Pipeline::from_policy_json(kPolicyWithTypo, JsonReadOptions{true, nullptr}); },
                             Status::InvalidPolicy);
    CHECK(contains(m, "futureOption: unknown property"));
}

TEST(dotnet_reading_rules) {
    const char *doc =
        R"({"scorers": [{"weight": 1}, {"type": "kind", "weight": 1, "kindWeights": {"Message": 1, "message": 2}}]})";
    std::vector<JsonWarning> warnings;
    Pipeline p = Pipeline::from_policy_json(doc, JsonReadOptions{}, &warnings);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0].kind == JsonWarningKind::MissingScorerType);
    CHECK_EQ(warnings[0].path, std::string("scorers[0].type"));
    CHECK(warnings[1].kind == JsonWarningKind::RepeatedKind);
    CHECK_EQ(warnings[1].path, std::string("scorers[1].kindWeights.message"));
    std::string text = p.policy_json();
    CHECK(contains(text, R"({"type":"recency","weight":1})"));
    CHECK(contains(text, R"("kindWeights":{"Message":2})"));
    std::string m = error_of([&] { Pipeline::from_policy_json(doc, JsonReadOptions{true, nullptr}); },
                             Status::InvalidPolicy);
    CHECK(contains(m, "scorers[0].type: is required"));
}

TEST(registry_runs_a_lambda_scorer) {
    std::atomic<int> calls{0};
    std::atomic<int> alive{0};
    {
        ScorerRegistry registry;
        registry.add("semanticSimilarity", Scorer::custom_batch([&calls, t = Tracker(&alive)](ItemsView items, Span<double> out) {
            ++calls;
            for (std::size_t i = 0; i < items.size(); i++) out[i] = static_cast<double>(items[i].content().size()) / 100;
        }));
        registry.add("freshness", Scorer::recency());
        CHECK(registry.names() == (std::vector<std::string>{"semanticSimilarity", "freshness"}));
        CHECK(alive.load() == 1);
        // Names compare case-insensitively.
        const char *doc = R"({"scorers": [{"type": "SEMANTICSIMILARITY", "weight": 1}]})";
        JsonReadOptions options{true, &registry};
        std::vector<JsonWarning> warnings;
        Pipeline p = Pipeline::from_policy_json(doc, options, &warnings);
        CHECK(warnings.empty());
        Items items({dated("short", 10, 2), dated("a much longer one", 10, 0), dated("middling", 10, 1)});
        Result r = p.run(items, Budget(20, 20));
        CHECK(calls.load() > 0);
        // The two longest contents fit, placed chronologically, with the lambda's scores.
        CHECK(r.indices().to_vector() == (std::vector<std::size_t>{1, 2}));
        CHECK(r.scores().to_vector() == (std::vector<double>{0.17, 0.08}));
        // Without the registry the name is unknown; an unknown name lists the registered ones.
        std::string m = error_of([&] { Pipeline::from_policy_json(doc, JsonReadOptions{}); }, Status::InvalidPolicy);
        CHECK(!contains(m, "registered:"));
        m = error_of([&] { Pipeline::from_policy_json(R"({"scorers": [{"type": "vibes", "weight": 1}]})", options); },
                     Status::InvalidPolicy);
        CHECK(contains(m, "\"vibes\""));
        CHECK(contains(m, "registered: semanticSimilarity, freshness"));
        // The lambda's state outlives the registry while a pipeline holds the scorer.
        {
            ScorerRegistry moved = std::move(registry);
        }
        CHECK(!registry);
        CHECK(alive.load() == 1);
        Result again = p.run(items, Budget(20, 20));
        CHECK(again.indices().size() == 2);
    }
    CHECK(alive.load() == 0);
}

TEST(registry_rejects_bad_names) {
    ScorerRegistry registry;
    Scorer recency = Scorer::recency();
    for (const char *name : {"", "  ", "recency", "MetadataKey"}) {
        CHECK_THROWS_STATUS(registry.add(name, recency), Status::InvalidArgument);
    }
    Scorer empty = std::move(recency);
    CHECK_THROWS_STATUS(registry.add("x", recency), Status::NullArgument);  // moved-from: NULL
    CHECK(registry.size() == 0);
    ScorerRegistry moved = std::move(registry);
    CHECK_THROWS_STATUS(registry.names(), Status::NullArgument);
}

namespace {
// The first budget of .NET's round-trip tests, as .NET writes it.
const std::string kDotNetBudget =
    R"({"maxTokens":8000,"targetTokens":6000,"outputReserve":1000,"reservedSlots":{"Message":100,"SystemPrompt":200},"estimationSafetyMarginPercent":10})";
const std::string kDotNetBudgetIndented =
    "{\n  \"maxTokens\": 8000,\n  \"targetTokens\": 6000,\n  \"outputReserve\": 1000,\n"
    "  \"reservedSlots\": {\n    \"Message\": 100,\n    \"SystemPrompt\": 200\n  },\n"
    "  \"estimationSafetyMarginPercent\": 10\n}";
}  // namespace

TEST(budget_json_round_trip) {
    Budget built(8000, 6000, 1000, {{"Message", 100}, {"SystemPrompt", 200}}, 10);
    CHECK_EQ(built.json(), kDotNetBudget);
    CHECK_EQ(built.json(true), kDotNetBudgetIndented);
    for (const std::string &text : {kDotNetBudget, kDotNetBudgetIndented}) {
        std::vector<JsonWarning> warnings{{JsonWarningKind::UnknownProperty, "stale", "", ""}};
        Budget read = Budget::from_json(text, JsonReadOptions{true, nullptr}, &warnings);
        CHECK(warnings.empty());
        CHECK_EQ(read.json(), kDotNetBudget);
        CHECK_EQ(read.json(true), kDotNetBudgetIndented);
    }
    // A budget read from JSON runs like one built in C++.
    Items items({dated("a", 10, 0), dated("b", 10, 1), dated("c", 10, 2)});
    Pipeline p(Scorer::recency(), Slicer::greedy(), Placer::chronological());
    Result from_json = p.run(items, Budget::from_json(R"({"maxTokens": 20, "targetTokens": 20})"));
    Result from_cpp = p.run(items, Budget(20, 20));
    CHECK(from_json.indices().to_vector() == from_cpp.indices().to_vector());
}

TEST(budget_json_warnings_and_errors) {
    std::vector<JsonWarning> warnings;
    Budget b = Budget::from_json(R"({"maxTokens": 100, "reservedSlots": {"Memory": 5, "memory": 0}, "x": 1})",
                                 JsonReadOptions{}, &warnings);
    REQUIRE(warnings.size() == 3);
    int unknown = 0, missing = 0, repeated = 0;
    for (const JsonWarning &w : warnings) {
        unknown += w.kind == JsonWarningKind::UnknownProperty;
        missing += w.kind == JsonWarningKind::MissingBudgetField;
        repeated += w.kind == JsonWarningKind::RepeatedKind;
    }
    CHECK(unknown == 1 && missing == 1 && repeated == 1);
    CHECK_EQ(b.json(), std::string(R"({"maxTokens":100,"targetTokens":0,"outputReserve":0,"reservedSlots":{"Memory":0},"estimationSafetyMarginPercent":0})"));
    const std::pair<const char *, const char *> cases[] = {
        {R"({"maxTokens": 1000, "targetTokens": 2000})", "targetTokens: 2000 cannot exceed maxTokens (1000)"},
        {R"({"maxTokens": 10, "targetTokens": 5, "x": 1})", "x: unknown property"},
        {R"({"maxTokens": 10})", "targetTokens: is required"},
        {R"({"maxTokens": )", "$: malformed JSON"},
    };
    for (const auto &[doc, want] : cases) {
        std::string m = error_of([&] { Budget::from_json(doc, JsonReadOptions{true, nullptr}); }, Status::InvalidBudget);
        CHECK(contains(m, want));
    }
}

int main() { return check::run_all(); }
