// Tests of the token counting and chat request wrappers of ctxpack.hpp against the real
// library: published token counts (tiktoken's tests), agreement with the C functions,
// limits and truncation; the bundled sample requests trimmed at several budgets, checked
// for tool calls kept with their results, kept and dropped positions, and the report
// mapped back to messages; a user message pinned so that an Anthropic request starts with
// one (rule pins); long tool outputs sent as their head and tail (shortening); errors as
// exceptions. Built and run by bindings/cpp/run.sh
// (plain and under ASan+UBSan), with the sample directory as the first argument.
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "check.hpp"
#include "ctxpack.hpp"

using namespace ctxpack;

namespace {

std::string data_dir = "examples/data";

std::string sample(const std::string &name) {
    std::ifstream in(data_dir + "/" + name + "-request.json", std::ios::binary);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
}

// The values of `"key": "…"` in text.
std::multiset<std::string> values(std::string_view text, const std::string &key) {
    std::multiset<std::string> out;
    std::string needle = "\"" + key + "\": \"";
    for (std::size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) {
        std::size_t start = at + needle.size();
        out.insert(std::string(text.substr(start, text.find('"', start) - start)));
    }
    return out;
}

}  // namespace

TEST(encoding_published_counts_agree_with_the_c_function) {
    Encoding cl = Encoding::get("cl100k_base");
    Encoding o = Encoding::get("O200K_base");
    CHECK(cl.name() == "cl100k_base");
    CHECK(o.name() == "o200k_base");
    CHECK_EQ(cl.count("hello world"), 2);
    CHECK_EQ(cl.count("tiktoken is great!"), 6);
    CHECK_EQ(o.count("antidisestablishmentarianism"), 6);
    CHECK_EQ(o.count("2 + 2 = 4"), 7);
    CHECK_EQ(o.count("\xe3\x81\x8a\xe8\xaa\x95\xe7\x94\x9f\xe6\x97\xa5\xe3\x81\x8a\xe3\x82\x81\xe3\x81\xa7\xe3\x81\xa8\xe3\x81\x86"), 8);
    std::string text = sample("openai");
    REQUIRE(text.size() > 1000);
    for (const Encoding &e : {cl, o}) {
        int64_t direct = -1;
        REQUIRE(ctxpack_encoding_count(e.native(), ctxpack_str{text.data(), text.size()}, &direct, nullptr) ==
                CTXPACK_OK);
        CHECK_EQ(e.count(text), direct);
    }
}

TEST(encoding_limit_and_truncate) {
    Encoding o = Encoding::get("o200k_base");
    std::string text;
    for (int i = 0; i < 100; i++) text += "Context windows are finite; choose well. ";
    text += "\xf0\x9f\xa6\x80";  // a crab at the end
    int64_t full = o.count(text);
    CHECK(o.count_with_limit(text, full) == std::optional<int64_t>(full));
    CHECK(!o.count_with_limit(text, 5).has_value());
    for (int64_t max : {int64_t(0), int64_t(1), int64_t(9), full - 1, full}) {
        Truncated t = o.truncate(text, max);
        CHECK(t.text.data() == text.data());
        CHECK(t.tokens <= max);
        CHECK_EQ(o.count(t.text), t.tokens);
    }
    CHECK(o.truncate(text, full).text.size() == text.size());
    CHECK(o.truncate(text, 0).text.empty());
    CHECK_THROWS_STATUS(Encoding::get("p50k_base"), Status::InvalidArgument);
    CHECK_THROWS_STATUS(o.count("bad \xc3\x28"), Status::InvalidUtf8);
    CHECK_THROWS_STATUS(o.count_with_limit("x", -1), Status::InvalidArgument);
    CHECK_THROWS_STATUS(o.truncate("x", -2), Status::InvalidArgument);
}

TEST(samples_keep_every_call_with_its_results) {
    Pipeline pipeline = Pipeline::preset("chat");
    struct Case {
        ChatFormat format;
        const char *name;
        const char *answer_key;
    };
    for (Case c : {Case{ChatFormat::OpenAI, "openai", "tool_call_id"},
                   Case{ChatFormat::Anthropic, "anthropic", "tool_use_id"}}) {
        std::string request = sample(c.name);
        REQUIRE(!request.empty());
        std::multiset<std::string> all_calls = values(request, "id");
        REQUIRE(all_calls.size() >= 4);
        CHECK(all_calls == values(request, c.answer_key));
        bool dropped_some = false;
        for (int64_t max : {100000, 6000, 3000, 1500}) {
            ChatOptions options;
            options.trace = TraceDetail::Item;
            ChatResult r = trim_chat(c.format, request, Budget(max, max), pipeline, options);
            std::string_view json = r.json();
            CHECK(values(json, "id") == values(json, c.answer_key));
            CHECK(r.tokens() <= max);
            CHECK(r.tokens() <= r.input_tokens());
            std::vector<std::size_t> kept = r.kept().to_vector(), dropped = r.dropped().to_vector();
            CHECK(!kept.empty());
            dropped_some = dropped_some || !dropped.empty();
            CHECK(dropped.empty() == (json == request));
            CHECK(r.adjustments().empty());
            CHECK(r.rule_pins().empty());
            // The report's indices are item positions; their paths name the messages.
            Result selection = r.selection();
            REQUIRE(selection.has_report());
            CHECK_EQ(selection.summary().total_candidates, r.item_count());
            std::set<std::string> dropped_paths;
            for (std::size_t m : dropped) dropped_paths.insert("messages[" + std::to_string(m) + "]");
            for (const ExcludedEntry &e : selection.excluded()) {
                CHECK(dropped_paths.count(std::string(r.item_path(e.index))) == 1);
            }
            std::size_t messages_selected = 0;
            for (std::size_t i : selection.indices()) {
                std::string path(r.item_path(i));
                CHECK(dropped_paths.count(path) == 0);
                messages_selected += path.rfind("messages[", 0) == 0;
            }
            CHECK_EQ(messages_selected, kept.size());
        }
        CHECK(dropped_some);
    }
}

TEST(options_and_errors) {
    Pipeline pipeline = Pipeline::preset("chat");
    Budget roomy(100000, 100000);
    std::string request =
        R"({"messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]})";
    ChatOptions none;
    none.overheads = ChatOverheads{};
    ChatOptions framed;
    framed.overheads = ChatOverheads{5, 0, 2, 0};
    CHECK_EQ(trim_openai(request, roomy, pipeline, framed).input_tokens() -
                 trim_openai(request, roomy, pipeline, none).input_tokens(),
             2 * 5 + 2);
    Encoding o = Encoding::get("o200k_base");
    CHECK_EQ(trim_openai(request, roomy, pipeline, none).input_tokens(),
             o.count("user") + o.count("Hi.") + o.count("assistant") + o.count("Hello."));
    ChatOptions cl;
    cl.encoding = "cl100k_base";
    CHECK(trim_openai(request, roomy, pipeline, cl).input_tokens() > 0);
    CHECK(!trim_openai(request, roomy, pipeline).selection().has_report());

    CHECK_THROWS_STATUS(trim_openai("{\"messages\": [", roomy, pipeline), Status::InvalidRequest);
    try {
        trim_anthropic(sample("openai"), roomy, pipeline);
        CHECK(false);
    } catch (const Error &e) {
        CHECK(e.status() == Status::InvalidRequest);
        CHECK(e.message().find("messages[0].role") != std::string_view::npos);
    }
    CHECK_THROWS_STATUS(trim_chat(static_cast<ChatFormat>(9), request, roomy, pipeline), Status::InvalidArgument);
    CHECK_THROWS_STATUS(trim_openai("{\"messages\": \"\xff\"}", roomy, pipeline), Status::InvalidUtf8);
    ChatOptions bad;
    bad.encoding = "gpt2";
    CHECK_THROWS_STATUS(trim_openai(request, roomy, pipeline, bad), Status::InvalidArgument);
    bad.encoding = {};
    bad.overheads = ChatOverheads{-1, 0, 0, 0};
    CHECK_THROWS_STATUS(trim_openai(request, roomy, pipeline, bad), Status::InvalidArgument);
    CHECK_THROWS_STATUS(trim_openai(sample("openai"), Budget(50, 50), pipeline), Status::PinnedExceedsBudget);
    // The selection outlives the chat result.
    std::optional<Result> selection;
    {
        ChatOptions traced;
        traced.trace = TraceDetail::Stage;
        selection.emplace(trim_openai(request, roomy, pipeline, traced).selection());
    }
    CHECK(selection->json().find("Hello.") != std::string_view::npos);
}

namespace {

// An Anthropic agent turn: the task, a tool call with a long result, a short answer and
// the next question, with `first` (messages and their commas) before it.
std::string agent_turn(const std::string &first) {
    return R"({"messages": [)" + first + R"({"role": "user", "content": "ten words about the task we are working on today"},)"
           R"({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {}}]},)"
           R"({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ")"
           R"(result result result result result result result result result result )"
           R"(result result result result result result result result result result"}]},)"
           R"({"role": "assistant", "content": "short answer"},)"
           R"({"role": "user", "content": "next question"}]})";
}

// The tokens of the whole agent turn (with `first` before it), as counted by a trim.
int64_t agent_turn_tokens(const Pipeline &pipeline, const std::string &first) {
    return trim_anthropic(agent_turn(first), Budget(1000000, 1000000), pipeline).input_tokens();
}

}  // namespace

// When the selection would start an Anthropic request with an assistant message, a user
// message is pinned for a second run if that keeps more than dropping the leading units.
TEST(a_user_message_is_pinned_rather_than_losing_the_leading_units) {
    Pipeline pipeline = Pipeline::preset("chat");
    // Two user messages in a row are one turn to Anthropic: repeating the first message
    // measures its tokens.
    int64_t all = agent_turn_tokens(pipeline, "");
    int64_t first =
        agent_turn_tokens(pipeline, R"({"role": "user", "content": "ten words about the task we are working on today"},)") -
        all;
    REQUIRE(all > 0 && first > 0);
    // Room for everything but the first message, which the pipeline leaves out: the
    // selection would start with the tool call. Pinning the first message and running
    // again keeps it, the answer and the question; dropping would keep the question alone.
    ChatResult r = trim_anthropic(agent_turn(""), Budget(all - first, all - first), pipeline);
    CHECK(r.kept().to_vector() == (std::vector<std::size_t>{0, 3, 4}));
    CHECK(r.adjustments().empty());
    std::vector<ChatRulePin> pins = r.rule_pins();
    REQUIRE(pins.size() == 1);
    CHECK(pins[0].path == "messages[0]");
    CHECK(pins[0].reason.find("starts with a user message") != std::string_view::npos);
    // The views are the library's NUL-terminated strings, owned by the result.
    CHECK(pins[0].path.data()[pins[0].path.size()] == '\0');
    CHECK(pins[0].reason.data()[pins[0].reason.size()] == '\0');
}

// Rule pins are views into a ChatResult: they compile on an lvalue only, not on a
// temporary that would be destroyed (and its result freed) before the views are used.
template <typename R, typename = void>
struct has_rule_pins : std::false_type {};
template <typename R>
struct has_rule_pins<R, std::void_t<decltype(std::declval<R>().rule_pins())>> : std::true_type {};
static_assert(has_rule_pins<const ChatResult &>::value && has_rule_pins<ChatResult &>::value);
static_assert(!has_rule_pins<ChatResult>::value && !has_rule_pins<ChatResult &&>::value);

// A trim can carry a prefix state across turns: the same request trimmed again with the
// first turn's state gives the same request and reuses all of it; another conversation's
// state is refused; without `prefix` there is no reuse report and no state.
TEST(prefix_state_across_turns) {
    Pipeline pipeline = Pipeline::preset("chat");
    Budget budget(6000, 4000);
    std::string request = sample("openai");
    REQUIRE(!request.empty());
    PrefixOptions prefix;
    prefix.conversation = "conversation-1";
    prefix.cache_rule = "openai";
    ChatOptions first_options;
    first_options.prefix = &prefix;
    ChatResult first = trim_openai(request, budget, pipeline, first_options);
    std::optional<Reuse> u1 = first.reuse();
    std::optional<PrefixState> s1 = first.prefix_state();
    REQUIRE(u1 && s1);
    CHECK_EQ(u1->turn, 1u);
    CHECK_EQ(u1->previous_entries, 0u);
    CHECK(first.json().size() < request.size());
    ChatOptions next = first_options;
    next.previous_state = &*s1;
    ChatResult second = trim_openai(request, budget, pipeline, next);
    std::optional<Reuse> u2 = second.reuse();
    REQUIRE(u2);
    CHECK(second.json() == first.json());
    CHECK_EQ(u2->turn, 2u);
    CHECK(!u2->difference);
    CHECK_EQ(u2->kept_entries, u2->window_entries);
    CHECK_EQ(u2->kept_tokens, u1->window_tokens);
    CHECK(u2->json.find("\"kept_entries\"") != std::string::npos);
    CHECK_EQ(second.prefix_state()->turn(), 2u);
    PrefixOptions other;
    other.conversation = "conversation-2";
    next.prefix = &other;
    CHECK_THROWS_STATUS(trim_openai(request, budget, pipeline, next), Status::InvalidState);
    next.prefix = nullptr;
    CHECK_THROWS_STATUS(trim_openai(request, budget, pipeline, next), Status::InvalidArgument);
    ChatResult plain = trim_openai(request, budget, pipeline);
    CHECK(!plain.reuse() && !plain.prefix_state());
    CHECK(plain.json() == first.json());
}

// A token in the options cancels a trim: never cancelled it changes nothing; cancelled
// before the call, or by a scorer during the run, the trim throws Status::Cancelled.
TEST(a_trim_is_cancellable) {
    Pipeline pipeline = Pipeline::preset("chat");
    Budget roomy(100000, 100000);
    std::string request = sample("openai");
    CancelToken token;
    ChatOptions with_token;
    with_token.cancel = &token;
    ChatResult plain = trim_openai(request, roomy, pipeline);
    ChatResult live = trim_openai(request, roomy, pipeline, with_token);
    CHECK(plain.json() == live.json());
    token.cancel();
    CHECK_THROWS_STATUS(trim_openai(request, roomy, pipeline, with_token), Status::Cancelled);

    CancelToken inner;
    Scorer cancelling = Scorer::custom([&inner](ItemsView, std::size_t) {
        inner.cancel();  // the run checks the token before its next scorer call
        return 0.5;
    });
    Pipeline custom(cancelling, Slicer::greedy(), Placer::chronological());
    ChatOptions cancelled_inside;
    cancelled_inside.cancel = &inner;
    CHECK_THROWS_STATUS(trim_anthropic(sample("anthropic"), roomy, custom, cancelled_inside), Status::Cancelled);
    CHECK(inner.is_cancelled());
}

namespace {

// `n` distinct words: "w1 w2 … wn".
std::string numbered_words(int n) {
    std::string out;
    for (int i = 1; i <= n; i++) out += (i > 1 ? " w" : "w") + std::to_string(i);
    return out;
}

// `text` as the characters of a JSON string (the escapes a JSON writer uses for it).
std::string json_escaped(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\n') out += "\\n";
        else if (c == '"' || c == '\\') out += std::string("\\") + c;
        else out += c;
    }
    return out;
}

// An OpenAI request: a question, a tool call, its result `output` (the characters of a
// JSON string), the answer and the next question.
std::string tool_request(const std::string &output) {
    return R"({"model": "m", "messages": [{"role": "user", "content": "check the logs"},)"
           R"({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", )"
           R"("function": {"name": "logs", "arguments": "{}"}}]},)"
           R"({"role": "tool", "tool_call_id": "c1", "content": ")" +
           output +
           R"("},)"
           R"({"role": "assistant", "content": "the logs are fine"},)"
           R"({"role": "user", "content": "thanks, and now?"}]})";
}

// The tool message's content in a trimmed `tool_request`, its escapes (\n, \", \\) read.
std::string tool_content(std::string_view json) {
    const std::string_view key = R"("tool_call_id": "c1", "content": ")";
    std::size_t at = json.find(key);
    std::string out;
    if (at == std::string_view::npos) return out;
    for (std::size_t i = at + key.size(); i < json.size() && json[i] != '"'; i++) {
        if (json[i] == '\\' && i + 1 < json.size()) {
            char c = json[++i];
            out += c == 'n' ? '\n' : c;
        } else {
            out += json[i];
        }
    }
    return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The tokens of `tool_request` with a two-letter output, and `extra` tokens more.
int64_t room_for_a_short_output(const Pipeline &pipeline, int64_t extra) {
    return trim_openai(tool_request("ok"), Budget(1000000, 1000000), pipeline).input_tokens() + extra;
}

}  // namespace

// A tool output too long for the budget drops its call with it; with `shorten` the call
// stays and the output is sent as its head and tail around the default marker, the
// request otherwise unchanged.
TEST(a_long_tool_output_is_sent_as_its_head_and_tail) {
    Pipeline pipeline = Pipeline::preset("chat");
    Encoding o = Encoding::get("o200k_base");
    const std::string output = numbered_words(400);
    const std::string request = tool_request(output);
    int64_t max = room_for_a_short_output(pipeline, 80);
    Budget budget(max, max);
    ChatResult plain = trim_openai(request, budget, pipeline);
    REQUIRE(plain.input_tokens() > max);
    CHECK(plain.kept().to_vector() == (std::vector<std::size_t>{0, 3, 4}));
    CHECK(plain.dropped().to_vector() == (std::vector<std::size_t>{1, 2}));
    CHECK(plain.shortened().empty());

    ChatOptions options;
    options.shorten = ChatShortening{20, 10, 0, {}};
    ChatResult r = trim_openai(request, budget, pipeline, options);
    CHECK(r.kept().to_vector() == (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    CHECK(r.dropped().empty());
    CHECK(r.shortened().to_vector() == (std::vector<std::size_t>{2}));
    CHECK(r.tokens() <= max);
    CHECK(r.tokens() < r.input_tokens());
    std::string content = tool_content(r.json());
    CHECK(starts_with(content, "w1 w2 w3 w4 w5 "));
    CHECK(ends_with(content, " w398 w399 w400"));
    CHECK(content.find(" w200 ") == std::string::npos);
    // Head, marker, tail: the head has at most 20 tokens (more than the tail's 10).
    std::size_t open = content.find("\n[\xe2\x80\xa6 "), close = content.find(" tokens omitted \xe2\x80\xa6]\n");
    REQUIRE(open != std::string::npos && close != std::string::npos && open < close);
    std::string head = content.substr(0, open), tail = content.substr(close + std::strlen(" tokens omitted \xe2\x80\xa6]\n"));
    CHECK(o.count(head) <= 20 && o.count(head) > 10);
    CHECK(o.count(tail) <= 10 && o.count(tail) > 0);
    // Only that string was replaced.
    CHECK(r.json() == tool_request(json_escaped(content)));

    // A fixed quality in (0, 1] is accepted and places the same form here.
    options.shorten->quality = 0.5;
    ChatResult fixed = trim_openai(request, budget, pipeline, options);
    CHECK(fixed.shortened().to_vector() == (std::vector<std::size_t>{2}));
    CHECK(fixed.json() == r.json());
    // When everything fits nothing is shortened.
    ChatResult roomy = trim_openai(request, Budget(1000000, 1000000), pipeline, options);
    CHECK(roomy.shortened().empty());
    CHECK(roomy.json() == request);
}

// A quality outside (0, 1], a marker that is not UTF-8, or shortening with a prefix state
// is refused.
TEST(shortening_options_are_checked) {
    Pipeline pipeline = Pipeline::preset("chat");
    const std::string request = tool_request(numbered_words(400));
    int64_t max = room_for_a_short_output(pipeline, 80);
    Budget budget(max, max);
    ChatOptions options;
    for (double quality : {1.5, -0.25, std::numeric_limits<double>::quiet_NaN()}) {
        options.shorten = ChatShortening{20, 10, quality, {}};
        CHECK_THROWS_STATUS(trim_openai(request, budget, pipeline, options), Status::InvalidArgument);
    }
    try {
        options.shorten = ChatShortening{20, 10, 1.5, {}};
        trim_openai(request, budget, pipeline, options);
        CHECK(false);
    } catch (const Error &e) {
        CHECK(e.message().find("shorten_quality") != std::string_view::npos);
    }
    options.shorten = ChatShortening{20, 10, 0, "\xff"};
    CHECK_THROWS_STATUS(trim_openai(request, budget, pipeline, options), Status::InvalidUtf8);
    options.shorten = ChatShortening{20, 10, 0, {}};
    PrefixOptions prefix;
    options.prefix = &prefix;
    CHECK_THROWS_STATUS(trim_openai(request, budget, pipeline, options), Status::InvalidArgument);
    // Head and tail both 0 is no shortening: the prefix options alone are fine.
    options.shorten = ChatShortening{};
    ChatResult unshortened = trim_openai(request, budget, pipeline, options);
    CHECK(unshortened.shortened().empty());
}

// The shortened positions are a view into a ChatResult: on an lvalue only.
template <typename R, typename = void>
struct has_shortened : std::false_type {};
template <typename R>
struct has_shortened<R, std::void_t<decltype(std::declval<R>().shortened())>> : std::true_type {};
static_assert(has_shortened<const ChatResult &>::value && !has_shortened<ChatResult>::value);

// A custom marker goes between head and tail, "{omitted}" replaced by the number of tokens
// left out.
TEST(a_custom_marker_counts_the_tokens_left_out) {
    Pipeline pipeline = Pipeline::preset("chat");
    Encoding o = Encoding::get("o200k_base");
    const std::string output = numbered_words(400);
    const std::string request = tool_request(output);
    ChatOptions options;
    options.shorten = ChatShortening{20, 10, 0, " [[{omitted} tokens cut]] "};
    int64_t max = room_for_a_short_output(pipeline, 80);
    ChatResult r = trim_openai(request, Budget(max, max), pipeline, options);
    CHECK(r.shortened().to_vector() == (std::vector<std::size_t>{2}));
    std::string content = tool_content(r.json());
    CHECK(content.find("tokens omitted") == std::string::npos);
    std::size_t open = content.find(" [["), close = content.find(" tokens cut]] ");
    REQUIRE(open != std::string::npos && close != std::string::npos && open < close);
    std::string head = content.substr(0, open), tail = content.substr(close + std::strlen(" tokens cut]] "));
    CHECK(starts_with(head, "w1 w2 w3 "));
    CHECK(ends_with(tail, " w399 w400"));
    int64_t omitted = std::stoll(content.substr(open + 3, close - open - 3));
    CHECK_EQ(omitted, o.count(output) - o.count(head) - o.count(tail));
    CHECK(r.json() == tool_request(json_escaped(content)));
}

int main(int argc, char **argv) {
    if (argc > 1) data_dir = argv[1];
    return check::run_all();
}
