// ctxpack.hpp: a header-only C++17 wrapper over the ctxpack C ABI (include/ctxpack.h).
//
// What it adds to the C functions, and nothing else:
//
// * ownership: every handle lives in a move-only class whose destructor calls the
//   matching `ctxpack_*_free`. A moved-from object is empty (`explicit operator bool`
//   is false); passing it to a call hands NULL to the library, which answers with a
//   status (NULL_ARGUMENT, or PIPELINE_CONFIG for a missing component), never with
//   undefined behaviour;
// * errors: every failing call throws `ctxpack::Error`, which carries the `Status` and
//   the library's message;
// * strings in as `std::string_view`, results out as `std::vector` or, for arrays the
//   result owns, as `Span` views (valid while the `Result` lives; calling those
//   accessors on a temporary `Result` does not compile);
// * items either owning their strings (`Item`) or borrowing the caller's (`ItemRef`,
//   pushed with no std::string made; binding one to a temporary string or container
//   does not compile);
// * callbacks: custom scorers, slicers and placers from any C++ callable. The callable
//   is moved to the heap and owned by the component; the library deletes it through the
//   `destroy` callback when the last reference to the component goes. Exceptions never
//   cross into the library: a callback that throws fails the run with
//   `Status::Callback` and the exception's `what()` as the message.
//
// Sharing and copying. The library reference-counts scorers, slicers and placers: a
// composite, scaled or quota component and a pipeline each keep their own reference to
// what they are built from. So one C++ `Scorer` can go into any number of composites
// and pipelines, and may be destroyed right after (the quickstart does). `Scorer`,
// `Slicer`, `Placer` and `Pipeline` are also copyable: a copy takes one more reference
// to the same library object (`ctxpack_*_retain`), each copy's destructor releases its
// own, and copies may live on and be destroyed on any threads. The other classes are
// move-only. A run is cancelled from another thread through a `CancelToken` in
// `RunOptions::cancel`. Everything here is immutable after construction except `Items`
// (push/clear), so a `Pipeline`, `Budget` and the components may be used from many
// threads at once (see docs/ffi.md, "Threads"); custom callbacks must then be
// thread-safe, and `destroy` may run on any thread.
//
// Build: add `include/` (ctxpack.h) and `bindings/cpp/include/` to the include path and
// link `-lctxpack`. See bindings/cpp/README.md.
#ifndef CTXPACK_HPP
#define CTXPACK_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ctxpack.h"

namespace ctxpack {

// ------------------------------------------------------------------ statuses and errors

// Every `ctxpack_status` value. The numbers are the ABI's and never change.
enum class Status : int32_t {
    Ok = CTXPACK_OK,
    EmptyContent = CTXPACK_EMPTY_CONTENT,
    EmptyKind = CTXPACK_EMPTY_KIND,
    EmptySource = CTXPACK_EMPTY_SOURCE,
    InvalidBudget = CTXPACK_INVALID_BUDGET,
    PinnedExceedsBudget = CTXPACK_PINNED_EXCEEDS_BUDGET,
    Overflow = CTXPACK_OVERFLOW,
    ScorerConfig = CTXPACK_SCORER_CONFIG,
    SlicerConfig = CTXPACK_SLICER_CONFIG,
    PipelineConfig = CTXPACK_PIPELINE_CONFIG,
    TableTooLarge = CTXPACK_TABLE_TOO_LARGE,
    CountRequirementUnmet = CTXPACK_COUNT_REQUIREMENT_UNMET,
    Callback = CTXPACK_CALLBACK,
    TokenOverflow = CTXPACK_TOKEN_OVERFLOW,
    InvalidPolicy = CTXPACK_INVALID_POLICY,
    InvalidArgument = CTXPACK_INVALID_ARGUMENT,
    OutOfMemory = CTXPACK_OUT_OF_MEMORY,
    Unsupported = CTXPACK_UNSUPPORTED,
    Cancelled = CTXPACK_CANCELLED,
    InvalidState = CTXPACK_INVALID_STATE,
    InvalidRequest = CTXPACK_INVALID_REQUEST,
    NullArgument = CTXPACK_NULL_ARGUMENT,
    InvalidUtf8 = CTXPACK_INVALID_UTF8,
    WrongHandleType = CTXPACK_WRONG_HANDLE_TYPE,
    OutOfRange = CTXPACK_OUT_OF_RANGE,
    NoReport = CTXPACK_NO_REPORT,
    Panic = CTXPACK_PANIC,
};

// The C name of a status (`"CTXPACK_NO_REPORT"`); `"CTXPACK_UNKNOWN_STATUS"` for a number
// the library does not know.
inline const char *status_name(Status status) noexcept {
    return ctxpack_status_name(static_cast<int32_t>(status));
}

// A failed call. `what()` is "<status name>: <message>"; `status()` tells which error it
// was (a status the wrapper does not know yet keeps its number). Copying is noexcept, as
// for every standard exception: the text lives in std::runtime_error's shared buffer.
class Error : public std::runtime_error {
public:
    Error(Status status, std::string_view message)
        : std::runtime_error(std::string(status_name(status)) + ": " + std::string(message)),
          status_(status) {}

    Status status() const noexcept { return status_; }

    // The library's message, without the status name.
    std::string_view message() const noexcept {
        std::string_view all = what();
        std::string_view prefix = status_name(status_);
        return all.substr(prefix.size() + 2);
    }

private:
    Status status_;
};

// Throws the error of a C call that returned `status` (nothing when it is CTXPACK_OK).
// Takes ownership of `error` (may be NULL) and frees it. Public so that code mixing raw
// C calls with the wrapper gets the same exceptions: `throw_if_failed(ctxpack_x(..., &e), e)`.
inline void throw_if_failed(ctxpack_status status, ctxpack_error *error = nullptr) {
    std::unique_ptr<ctxpack_error, void (*)(ctxpack_error *)> owned(error, ctxpack_error_free);
    if (status == CTXPACK_OK) return;
    if (error != nullptr) {
        ctxpack_str message = ctxpack_error_message(error);
        throw Error(static_cast<Status>(ctxpack_error_code(error)),
                    std::string_view(message.ptr, message.len));
    }
    throw Error(static_cast<Status>(status), "(no error object)");
}

// The library version ("MAJOR.MINOR.PATCH").
inline std::string_view version() noexcept { return ctxpack_version(); }
// The library version as MAJOR * 10000 + MINOR * 100 + PATCH (compare with
// CTXPACK_VERSION_NUMBER, the header's).
inline uint32_t version_number() noexcept { return ctxpack_version_number(); }

// ------------------------------------------------------------------ enumerations

enum class OverflowStrategy : int32_t {
    Throw = CTXPACK_OVERFLOW_STRATEGY_THROW,
    Truncate = CTXPACK_OVERFLOW_STRATEGY_TRUNCATE,
    Proceed = CTXPACK_OVERFLOW_STRATEGY_PROCEED,
};

enum class TraceDetail : int32_t {
    None = CTXPACK_TRACE_DETAIL_NONE,
    Stage = CTXPACK_TRACE_DETAIL_STAGE,
    Item = CTXPACK_TRACE_DETAIL_ITEM,
};

enum class InclusionReason : int32_t {
    Scored = CTXPACK_INCLUSION_REASON_SCORED,
    Pinned = CTXPACK_INCLUSION_REASON_PINNED,
    ZeroToken = CTXPACK_INCLUSION_REASON_ZERO_TOKEN,
    // Placed as one of its cheaper variants (docs/variants.md): see IncludedEntry.
    Downgraded = CTXPACK_INCLUSION_REASON_DOWNGRADED,
};

// Why an item is in the window as a cheaper variant (IncludedEntry::cause).
enum class DowngradeCause : int32_t {
    None = CTXPACK_DOWNGRADE_CAUSE_NONE,
    BudgetExceeded = CTXPACK_DOWNGRADE_CAUSE_BUDGET_EXCEEDED,
    SlicerChoice = CTXPACK_DOWNGRADE_CAUSE_SLICER_CHOICE,
    Truncated = CTXPACK_DOWNGRADE_CAUSE_TRUNCATED,
};

enum class ExclusionReason : int32_t {
    Unknown = CTXPACK_EXCLUSION_REASON_UNKNOWN,
    BudgetExceeded = CTXPACK_EXCLUSION_REASON_BUDGET_EXCEEDED,
    ScoredTooLow = CTXPACK_EXCLUSION_REASON_SCORED_TOO_LOW,
    Deduplicated = CTXPACK_EXCLUSION_REASON_DEDUPLICATED,
    QuotaCapExceeded = CTXPACK_EXCLUSION_REASON_QUOTA_CAP_EXCEEDED,
    QuotaRequireDisplaced = CTXPACK_EXCLUSION_REASON_QUOTA_REQUIRE_DISPLACED,
    NegativeTokens = CTXPACK_EXCLUSION_REASON_NEGATIVE_TOKENS,
    PinnedOverride = CTXPACK_EXCLUSION_REASON_PINNED_OVERRIDE,
    Filtered = CTXPACK_EXCLUSION_REASON_FILTERED,
    CountCapExceeded = CTXPACK_EXCLUSION_REASON_COUNT_CAP_EXCEEDED,
    CountRequireCandidatesExhausted = CTXPACK_EXCLUSION_REASON_COUNT_REQUIRE_CANDIDATES_EXHAUSTED,
    // The item's group was left out because another member was (docs/groups.md).
    GroupExcluded = CTXPACK_EXCLUSION_REASON_GROUP_EXCLUDED,
};

// How a group's value is computed from its members' scores (docs/groups.md).
enum class GroupValue : int32_t {
    Sum = CTXPACK_GROUP_VALUE_SUM,
    Max = CTXPACK_GROUP_VALUE_MAX,
    Mean = CTXPACK_GROUP_VALUE_MEAN,
};

// Whether a group of a report is in the window.
enum class GroupDecision : int32_t {
    Included = CTXPACK_GROUP_DECISION_INCLUDED,
    Excluded = CTXPACK_GROUP_DECISION_EXCLUDED,
};

enum class PipelineStage : int32_t {
    Classify = CTXPACK_PIPELINE_STAGE_CLASSIFY,
    Score = CTXPACK_PIPELINE_STAGE_SCORE,
    Deduplicate = CTXPACK_PIPELINE_STAGE_DEDUPLICATE,
    Slice = CTXPACK_PIPELINE_STAGE_SLICE,
    Place = CTXPACK_PIPELINE_STAGE_PLACE,
};

enum class DecayCurve : int32_t {
    Exponential = CTXPACK_DECAY_CURVE_KIND_EXPONENTIAL,
    Window = CTXPACK_DECAY_CURVE_KIND_WINDOW,
    Step = CTXPACK_DECAY_CURVE_KIND_STEP,
};

enum class Scarcity : int32_t {
    Degrade = CTXPACK_SCARCITY_DEGRADE,
    Throw = CTXPACK_SCARCITY_THROW,
};

// ------------------------------------------------------------------ views

// A read-only view of `size()` elements owned by someone else (C++20's std::span, minus
// what is not needed here).
template <typename T>
class Span {
public:
    constexpr Span() noexcept = default;
    constexpr Span(T *data, std::size_t size) noexcept : data_(size ? data : nullptr), size_(size) {}
    // A vector viewed as a span of const elements.
    template <typename U = T, typename = std::enable_if_t<std::is_const_v<U>>>
    Span(const std::vector<std::remove_const_t<T>> &v) noexcept : Span(v.data(), v.size()) {}

    T *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T &operator[](std::size_t i) const noexcept { return data_[i]; }
    T *begin() const noexcept { return data_; }
    T *end() const noexcept { return data_ + size_; }
    std::vector<std::remove_const_t<T>> to_vector() const { return {begin(), end()}; }

private:
    T *data_ = nullptr;
    std::size_t size_ = 0;
};

namespace detail {

inline ctxpack_str str(std::string_view s) noexcept { return ctxpack_str{s.data(), s.size()}; }
inline std::string_view view(ctxpack_str s) noexcept { return std::string_view(s.ptr, s.len); }

// A struct that may grow: zero-initialised with `struct_size` set, as the ABI requires
// (docs/ffi.md, "Structs that grow").
template <typename T>
T sized() noexcept {
    T t{};
    t.struct_size = sizeof(T);
    return t;
}

// Calls `f(ctxpack_error **)` and throws its error, if any.
template <typename F>
void call(F &&f) {
    ctxpack_error *error = nullptr;
    ctxpack_status status = f(&error);
    throw_if_failed(status, error);
}

// Accessors return a status only (no error object): the message names the function.
inline void check(ctxpack_status status, const char *function) {
    if (status != CTXPACK_OK) {
        throw Error(static_cast<Status>(status), std::string(function) + " failed");
    }
}

// Reads one value through an accessor `f(handle, T *out)` that returns a status only.
template <typename T, typename H, typename F>
T get(F f, const H *handle, const char *function) {
    T out{};
    check(f(handle, &out), function);
    return out;
}

// Calls a `(..., T **out, ctxpack_error **)` constructor and returns the new handle.
template <typename T, typename F>
T *create(F &&f) {
    T *out = nullptr;
    call([&](ctxpack_error **error) { return f(&out, error); });
    return out;
}

// Copies and frees a string the library created.
inline std::string take_string(ctxpack_string *raw) {
    std::unique_ptr<ctxpack_string, void (*)(ctxpack_string *)> owned(raw, ctxpack_string_free);
    ctxpack_str text{};
    check(ctxpack_string_value(raw, &text), "ctxpack_string_value");
    return std::string(view(text));
}

// The owner of one handle: move-only, frees it with `Free` (NULL-safe in the ABI).
template <typename T, void (*Free)(T *)>
class Owned {
public:
    // The raw handle, for calling C functions directly; still owned by this object.
    T *native() const noexcept { return ptr_.get(); }
    // Gives up ownership: the caller must free the handle.
    T *release() noexcept { return ptr_.release(); }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }

protected:
    Owned() noexcept = default;
    explicit Owned(T *owned) noexcept : ptr_(owned) {}

private:
    struct Deleter {
        void operator()(T *p) const noexcept { Free(p); }
    };
    std::unique_ptr<T, Deleter> ptr_;
};

// The owner of one reference to a reference-counted handle: copying takes another
// reference (`Retain`), destruction and assignment release one (`Free`).
template <typename T, void (*Free)(T *), T *(*Retain)(T *)>
class Shared {
public:
    // The raw handle, for calling C functions directly; still owned by this object.
    T *native() const noexcept { return ptr_; }
    // Gives up this object's reference: the caller must free the handle.
    T *release() noexcept { return std::exchange(ptr_, nullptr); }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }

    Shared(const Shared &other) noexcept : ptr_(other.ptr_ ? Retain(other.ptr_) : nullptr) {}
    Shared(Shared &&other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
    Shared &operator=(Shared other) noexcept {
        std::swap(ptr_, other.ptr_);
        return *this;
    }
    ~Shared() { Free(ptr_); }

protected:
    Shared() noexcept = default;
    explicit Shared(T *owned) noexcept : ptr_(owned) {}

private:
    T *ptr_ = nullptr;
};

}  // namespace detail

// One item as a callback sees it. It points into the library's memory: valid only during
// the callback, like every string_view it returns.
class ItemView {
public:
    explicit ItemView(const ctxpack_item_view &item) noexcept : v_(&item) {}

    std::string_view content() const noexcept { return detail::view(v_->content); }
    int64_t tokens() const noexcept { return v_->tokens; }
    std::string_view kind() const noexcept { return detail::view(v_->kind); }
    std::string_view source() const noexcept { return detail::view(v_->source); }
    std::optional<int64_t> priority() const noexcept { return optional(v_->has_priority, v_->priority); }
    std::size_t tag_count() const noexcept { return v_->tag_count; }
    std::string_view tag(std::size_t i) const noexcept { return detail::view(v_->tags[i]); }
    std::vector<std::string_view> tags() const {
        std::vector<std::string_view> out;
        for (std::size_t i = 0; i < tag_count(); i++) out.push_back(tag(i));
        return out;
    }
    // The value of a metadata key (exact, case-sensitive), if the item has it.
    std::optional<std::string_view> metadata(std::string_view key) const noexcept {
        for (std::size_t i = 0; i < v_->metadata_count; i++) {
            if (detail::view(v_->metadata[i].key) == key) return detail::view(v_->metadata[i].value);
        }
        return std::nullopt;
    }
    std::optional<int64_t> timestamp_ns() const noexcept { return optional(v_->has_timestamp, v_->timestamp_ns); }
    std::optional<double> future_relevance_hint() const noexcept {
        return optional(v_->has_future_relevance_hint, v_->future_relevance_hint);
    }
    bool pinned() const noexcept { return v_->pinned; }
    std::optional<int64_t> original_tokens() const noexcept {
        return optional(v_->has_original_tokens, v_->original_tokens);
    }
    const ctxpack_item_view &native() const noexcept { return *v_; }

private:
    template <typename T>
    static std::optional<T> optional(bool present, T value) noexcept {
        return present ? std::optional<T>(value) : std::nullopt;
    }
    const ctxpack_item_view *v_;
};

// The items a callback receives, indexable and iterable as `ItemView`s.
class ItemsView {
public:
    ItemsView(const ctxpack_item_view *items, std::size_t count) noexcept : items_(items), count_(count) {}

    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    ItemView operator[](std::size_t i) const noexcept { return ItemView(items_[i]); }

    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = ItemView;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = ItemView;
        explicit iterator(const ctxpack_item_view *p) noexcept : p_(p) {}
        ItemView operator*() const noexcept { return ItemView(*p_); }
        iterator &operator++() noexcept { ++p_; return *this; }
        iterator operator++(int) noexcept { iterator old = *this; ++p_; return old; }
        bool operator==(const iterator &o) const noexcept { return p_ == o.p_; }
        bool operator!=(const iterator &o) const noexcept { return p_ != o.p_; }

    private:
        const ctxpack_item_view *p_;
    };
    iterator begin() const noexcept { return iterator(items_); }
    iterator end() const noexcept { return iterator(items_ + count_); }

private:
    const ctxpack_item_view *items_;
    std::size_t count_;
};

// ------------------------------------------------------------------ callbacks

// A per-item scorer: the score of `items[index]`, computed against all of `items`.
using ScoreItemFn = std::function<double(ItemsView items, std::size_t index)>;
// A batch scorer: writes one finite score per item into `out` (pre-filled with NaN).
using ScoreAllFn = std::function<void(ItemsView items, Span<double> out)>;
// A slicer: receives the items sorted by score (descending) and the effective budget,
// returns the chosen positions (into `items`, each at most once, any order).
using SliceFn = std::function<std::vector<std::size_t>(ItemsView items, Span<const double> scores,
                                                       int64_t target_tokens, int64_t max_tokens)>;
// A placer: returns a permutation of 0..items.size(), the position placed first first.
using PlaceFn = std::function<std::vector<std::size_t>(ItemsView items, Span<const double> scores)>;
// Observes the overflow event of a Proceed run: the excess tokens and the merged items
// as positions in the caller's list. Runs synchronously, on the calling thread.
using OverflowFn = std::function<void(int64_t tokens_over_budget, Span<const std::size_t> items)>;

namespace detail {

// Reports a failure from a callback. The library copies `error->message` as soon as the
// callback returns, so a thread_local string is enough to keep it alive until then
// (docs/ffi.md, "Callbacks"); nothing is allocated on the library's behalf.
inline int callback_failed(ctxpack_callback_error *error, const char *what) noexcept {
    thread_local std::string message;
    try {
        message.assign(what);
    } catch (...) {
        message.clear();  // out of memory: fail without a message
    }
    error->message = str(message);
    return 1;
}

// Runs a callback body. No exception may unwind into the library (it is Rust code
// called through C), so every exception becomes the callback's failure message.
template <typename Body>
int guarded(ctxpack_callback_error *error, Body &&body) noexcept {
    try {
        body();
        return 0;
    } catch (const std::exception &e) {
        return callback_failed(error, e.what());
    } catch (...) {
        return callback_failed(error, "a C++ exception that is not a std::exception");
    }
}

// The `destroy` callback of every custom component: deletes the heap copy of the
// callable. The library calls it exactly once, when the last reference goes.
template <typename Fn>
void destroy(void *user_data) noexcept {
    delete static_cast<Fn *>(user_data);
}

template <typename Fn>
Fn &callable(void *user_data) noexcept {
    return *static_cast<Fn *>(user_data);
}

// Creates a custom component from `fn` through `ctor(user_data, destroy, out, error)`.
// The component owns the callable only once the constructor succeeded; on failure the
// ABI leaves `user_data` with the caller, and the unique_ptr frees it.
template <typename T, typename Fn, typename Ctor>
T *make_custom(Fn fn, const char *what, Ctor &&ctor) {
    if (!fn) throw Error(Status::NullArgument, std::string(what) + ": an empty std::function");
    auto holder = std::make_unique<Fn>(std::move(fn));
    T *out = create<T>([&](T **o, ctxpack_error **error) {
        return ctor(static_cast<void *>(holder.get()), &destroy<Fn>, o, error);
    });
    holder.release();  // owned by the component from here on
    return out;
}

// Copies a callback's chosen positions into the library's buffer (capacity `capacity`),
// refusing more than fit: the library validates the positions themselves.
inline void copy_positions(const std::vector<std::size_t> &from, std::size_t *to, std::size_t capacity,
                           const char *what) {
    if (from.size() > capacity) {
        throw std::length_error(std::string(what) + " returned " + std::to_string(from.size()) +
                                " positions for " + std::to_string(capacity) + " items");
    }
    std::copy(from.begin(), from.end(), to);
}

}  // namespace detail

// ------------------------------------------------------------------ items and budget

// A cheaper alternative form of an item: a summary, an excerpt or a stub, placed instead
// of the item (never in addition). `tokens` >= 0; `quality` in (0, 1] is the share of the
// item's value the form keeps. A variant with as many tokens as its item or more is
// accepted and pruned (Result::pruned_forms()).
struct Variant {
    std::string content;
    int64_t tokens = 0;
    double quality = 1.0;
};

// One candidate item. Every field of the data model; `kind` and `source` empty mean the
// defaults (`Message`, `Chat`). The library copies everything on push.
struct Item {
    std::string content;
    int64_t tokens = 0;
    std::string kind = {};
    std::string source = {};
    std::optional<int64_t> priority = {};
    std::vector<std::string> tags = {};
    // Key/value pairs; a later entry with the same key replaces an earlier one.
    std::vector<std::pair<std::string, std::string>> metadata = {};
    // Nanoseconds since the Unix epoch, UTC.
    std::optional<int64_t> timestamp_ns = {};
    std::optional<double> future_relevance_hint = {};
    bool pinned = false;
    std::optional<int64_t> original_tokens = {};
    // The group key (docs/groups.md): items with equal keys are selected or dropped
    // together and placed next to each other. Empty: no group.
    std::string group = {};
    // A built-in encoding ("o200k_base", "cl100k_base") with which the library counts
    // `content` (then `tokens` must be 0); empty: `tokens` is the caller's count.
    std::string encoding = {};
    // Cheaper alternative forms, richest first by convention (docs/variants.md): a run may
    // place one of them instead of the item (Result::forms() says which).
    std::vector<Variant> variants = {};
};


// ------------------------------------------------------------------ borrowed items

// A string an `ItemRef` borrows: a view of the caller's bytes, nothing copied. It binds
// to a `std::string` lvalue, a `std::string_view` or a `const char *` (NUL-terminated;
// null is the empty string), but not to a temporary `std::string`: `StrRef s =
// std::string("x");` does not compile, because the view would dangle as soon as the
// statement ends. (A `string_view` or `const char *` the caller made from a temporary
// is beyond what the compiler can see; keep the bytes alive, as below.)
class StrRef {
public:
    constexpr StrRef() noexcept = default;
    constexpr StrRef(std::string_view s) noexcept : s_(s) {}
    StrRef(const char *s) noexcept : s_(s != nullptr ? std::string_view(s) : std::string_view()) {}
    StrRef(const std::string &s) noexcept : s_(s) {}
    StrRef(std::string &&) = delete;

    constexpr std::string_view view() const noexcept { return s_; }
    constexpr operator std::string_view() const noexcept { return s_; }

private:
    std::string_view s_;
};

namespace detail {

// The C form of one element of a borrowed list, for each list an ItemRef has.
template <typename Entry, typename E, typename = void>
struct entry_of : std::false_type {};
// Tags: anything convertible to std::string_view (std::string, string_view, StrRef,
// const char *).
template <typename E>
struct entry_of<ctxpack_str, E, std::enable_if_t<std::is_convertible_v<const E &, std::string_view>>>
    : std::true_type {
    static ctxpack_str get(const E &e) noexcept { return str(std::string_view(e)); }
};
// Metadata: pairs of strings (std::pair, a std::map's elements).
template <typename E>
struct entry_of<ctxpack_metadata_entry, E,
                std::enable_if_t<std::is_convertible_v<decltype(std::declval<const E &>().first), std::string_view> &&
                                 std::is_convertible_v<decltype(std::declval<const E &>().second), std::string_view>>>
    : std::true_type {
    static ctxpack_metadata_entry get(const E &e) noexcept {
        return {str(std::string_view(e.first)), str(std::string_view(e.second))};
    }
};
// Variants: anything with `content`, `tokens` and `quality` (Variant, VariantRef).
template <typename E>
struct entry_of<ctxpack_variant_desc, E,
                std::enable_if_t<std::is_convertible_v<decltype(std::declval<const E &>().content), std::string_view> &&
                                 std::is_convertible_v<decltype(std::declval<const E &>().tokens), int64_t> &&
                                 std::is_convertible_v<decltype(std::declval<const E &>().quality), double>>>
    : std::true_type {
    static ctxpack_variant_desc get(const E &e) noexcept {
        auto d = sized<ctxpack_variant_desc>();
        d.content = str(std::string_view(e.content));
        d.tokens = e.tokens;
        d.quality = e.quality;
        return d;
    }
};

// The element type of a container, when its elements have a C form `Entry`.
template <typename Entry, typename C>
using borrowable_t = std::enable_if_t<
    entry_of<Entry, std::remove_cv_t<std::remove_reference_t<decltype(*std::begin(std::declval<const C &>()))>>>::value>;

// A list an ItemRef borrows: any container the caller owns (a vector, an array, a map...)
// whose elements have a C form `Entry`. It refers to the container itself, so it binds to
// lvalues only: a temporary container does not compile. Nothing is copied until a push,
// which writes the elements' C forms into the push's own buffer.
template <typename Entry>
class Borrowed {
public:
    constexpr Borrowed() noexcept = default;
    template <typename C, typename = borrowable_t<Entry, C>>
    Borrowed(const C &container) noexcept : container_(&container), append_(&append_all<C>) {}
    template <typename C, typename = std::enable_if_t<!std::is_lvalue_reference_v<C>>,
              typename = borrowable_t<Entry, std::remove_reference_t<C>>>
    Borrowed(C &&) = delete;

    // Appends the C form of every element to `out`.
    void append_to(std::vector<Entry> &out) const {
        if (append_ != nullptr) append_(container_, out);
    }

private:
    template <typename C>
    static void append_all(const void *container, std::vector<Entry> &out) {
        using E = std::remove_cv_t<std::remove_reference_t<decltype(*std::begin(std::declval<const C &>()))>>;
        for (const auto &e : *static_cast<const C *>(container)) out.push_back(entry_of<Entry, E>::get(e));
    }
    const void *container_ = nullptr;
    void (*append_)(const void *, std::vector<Entry> &) = nullptr;
};

}  // namespace detail

// A variant whose content is borrowed (see `ItemRef`).
struct VariantRef {
    StrRef content;
    int64_t tokens = 0;
    double quality = 1.0;
};

// Tags borrowed from a container of strings the caller owns.
using TagsRef = detail::Borrowed<ctxpack_str>;
// Metadata borrowed from a container of string pairs the caller owns (a
// `std::vector<std::pair<...>>`, a `std::map<std::string, std::string>`...).
using MetadataRef = detail::Borrowed<ctxpack_metadata_entry>;
// Variants borrowed from a container of `Variant` or `VariantRef` the caller owns.
using VariantsRef = detail::Borrowed<ctxpack_variant_desc>;

// One candidate item that borrows its strings and lists instead of owning them: pushing
// it (`Items::push_ref`, `Items::push_refs`) hands the caller's bytes to the library,
// which copies them once, with no `std::string` made on the way. The same fields as
// `Item`, with the same meaning.
//
// Lifetime: every string and container it refers to must stay alive and unchanged until
// the push returns; nothing is needed after it. Temporaries are refused at compile time
// wherever the compiler can see them (a temporary `std::string` for a string field, a
// temporary container for a list), so `ItemRef{std::to_string(n), 1}` does not compile;
// write `std::string s = std::to_string(n); ItemRef{s, 1}` instead.
struct ItemRef {
    StrRef content;
    int64_t tokens = 0;
    StrRef kind = {};
    StrRef source = {};
    std::optional<int64_t> priority = {};
    TagsRef tags = {};
    // A later entry with the same key replaces an earlier one.
    MetadataRef metadata = {};
    // Nanoseconds since the Unix epoch, UTC.
    std::optional<int64_t> timestamp_ns = {};
    std::optional<double> future_relevance_hint = {};
    bool pinned = false;
    std::optional<int64_t> original_tokens = {};
    StrRef group = {};
    StrRef encoding = {};
    VariantsRef variants = {};
};

namespace detail {

// The descriptors of a batch of ItemRefs, with one buffer per list for the whole batch
// (three allocations for any number of items, none per string).
class RefDescriptors {
public:
    RefDescriptors(const ItemRef *items, std::size_t count) {
        struct Offsets {
            std::size_t tags, metadata, variants;
        };
        std::vector<Offsets> offsets;
        offsets.reserve(count);
        descs_.reserve(count);
        for (std::size_t i = 0; i < count; i++) {
            const ItemRef &item = items[i];
            offsets.push_back({tags_.size(), metadata_.size(), variants_.size()});
            item.tags.append_to(tags_);
            item.metadata.append_to(metadata_);
            item.variants.append_to(variants_);
            auto d = sized<ctxpack_item_desc>();
            d.content = str(item.content);
            d.tokens = item.tokens;
            d.kind = str(item.kind);
            d.source = str(item.source);
            d.has_priority = item.priority.has_value();
            d.priority = item.priority.value_or(0);
            d.has_timestamp = item.timestamp_ns.has_value();
            d.timestamp_ns = item.timestamp_ns.value_or(0);
            d.has_future_relevance_hint = item.future_relevance_hint.has_value();
            d.future_relevance_hint = item.future_relevance_hint.value_or(0.0);
            d.pinned = item.pinned;
            d.has_original_tokens = item.original_tokens.has_value();
            d.original_tokens = item.original_tokens.value_or(0);
            d.group = str(item.group);
            d.encoding = str(item.encoding);
            descs_.push_back(d);
        }
        // The buffers are complete: point each descriptor at its part of them.
        for (std::size_t i = 0; i < count; i++) {
            const Offsets &o = offsets[i];
            const Offsets end = i + 1 < count ? offsets[i + 1]
                                              : Offsets{tags_.size(), metadata_.size(), variants_.size()};
            ctxpack_item_desc &d = descs_[i];
            d.tags = tags_.data() + o.tags;
            d.tag_count = end.tags - o.tags;
            d.metadata = metadata_.data() + o.metadata;
            d.metadata_count = end.metadata - o.metadata;
            d.variants = variants_.data() + o.variants;
            d.variant_count = end.variants - o.variants;
        }
    }
    RefDescriptors(const RefDescriptors &) = delete;
    RefDescriptors &operator=(const RefDescriptors &) = delete;

    const ctxpack_item_desc *data() const noexcept { return descs_.data(); }
    std::size_t size() const noexcept { return descs_.size(); }

private:
    std::vector<ctxpack_str> tags_;
    std::vector<ctxpack_metadata_entry> metadata_;
    std::vector<ctxpack_variant_desc> variants_;
    std::vector<ctxpack_item_desc> descs_;
};

// An owned item seen as a borrowed one (it refers to `item`'s strings and lists).
inline ItemRef borrow(const Item &item) noexcept {
    ItemRef r{item.content, item.tokens, item.kind, item.source, item.priority, item.tags, item.metadata};
    r.timestamp_ns = item.timestamp_ns;
    r.future_relevance_hint = item.future_relevance_hint;
    r.pinned = item.pinned;
    r.original_tokens = item.original_tokens;
    r.group = item.group;
    r.encoding = item.encoding;
    r.variants = item.variants;
    return r;
}
ItemRef borrow(Item &&) = delete;

}  // namespace detail

// The list of candidates. Results and reports identify items by their position here.
// A run works on the list as it was when it started, so `push` and `clear` (from any
// thread, or from a callback of a running pipeline) change only later runs.
class Items : public detail::Owned<ctxpack_items, ctxpack_items_free> {
public:
    Items() : Owned(detail::create<ctxpack_items>(ctxpack_items_new)) {}
    explicit Items(const std::vector<Item> &items) : Items() { push_many(items); }

    // Pushes a copy of `item`.
    void push(const Item &item) { push_ref(detail::borrow(item)); }

    // All or nothing: on error nothing is appended, and the message starts "item <i>:".
    void push_many(const std::vector<Item> &items) {
        std::vector<ItemRef> refs;
        refs.reserve(items.size());
        for (const Item &item : items) refs.push_back(detail::borrow(item));
        push_refs(refs);
    }

    // Pushes an item that borrows the caller's strings (see `ItemRef` for how long they
    // must live): the library copies the bytes, no std::string is made.
    void push_ref(const ItemRef &item) {
        detail::RefDescriptors d(&item, 1);
        detail::call([&](ctxpack_error **e) { return ctxpack_items_push(native(), d.data(), e); });
    }

    // `push_ref` for many items at once, all or nothing as `push_many` (the message starts
    // "item <i>:").
    void push_refs(const std::vector<ItemRef> &items) { push_refs(items.data(), items.size()); }
    void push_refs(const ItemRef *items, std::size_t count) {
        detail::RefDescriptors descs(items, count);
        detail::call([&](ctxpack_error **e) {
            return ctxpack_items_push_many(native(), descs.data(), descs.size(), e);
        });
    }

    std::size_t size() const {
        std::size_t n = 0;
        detail::check(ctxpack_items_len(native(), &n), "ctxpack_items_len");
        return n;
    }

    void clear() { detail::check(ctxpack_items_clear(native()), "ctxpack_items_clear"); }
};

// Tokens reserved for one kind.
struct ReservedSlot {
    std::string_view kind;
    int64_t count;
};

// Every field of a budget, by name (a reserved slot shrinks the room of every kind,
// its own included).
struct BudgetSpec {
    int64_t max_tokens = 0;
    int64_t target_tokens = 0;
    int64_t output_reserve = 0;
    std::vector<ReservedSlot> reserved_slots = {};
    double estimation_safety_margin_percent = 0.0;
};

struct JsonReadOptions;  // policy and budget JSON: see the section after Pipeline
struct JsonWarning;

// A validated token budget; immutable.
class Budget : public detail::Owned<ctxpack_budget, ctxpack_budget_free> {
public:
    // A budget from the JSON form of the .NET library (docs/policy-json.md), read
    // leniently; see the overload with options for strict reading and the warnings.
    static Budget from_json(std::string_view json);
    // A budget from its JSON form read with `options` (its registry is not used); the
    // warnings of a lenient read are stored in `*warnings` when it is not null. Every
    // failure is Status::InvalidBudget, with the JSON path first in the message.
    static Budget from_json(std::string_view json, const JsonReadOptions &options,
                            std::vector<JsonWarning> *warnings = nullptr);
    // The budget in the JSON form of the .NET library, byte for byte what .NET writes
    // (compact, or indented by two spaces).
    std::string json(bool pretty = false) const;

    explicit Budget(const BudgetSpec &spec)
        : Owned(detail::create<ctxpack_budget>([&](ctxpack_budget **out, ctxpack_error **e) {
              std::vector<ctxpack_reserved_slot> slots;
              for (const ReservedSlot &s : spec.reserved_slots) slots.push_back({detail::str(s.kind), s.count});
              ctxpack_budget_desc d = CTXPACK_BUDGET_DESC_INIT;
              d.max_tokens = spec.max_tokens;
              d.target_tokens = spec.target_tokens;
              d.output_reserve = spec.output_reserve;
              d.slots = slots.data();
              d.slot_count = slots.size();
              d.estimation_safety_margin_percent = spec.estimation_safety_margin_percent;
              return ctxpack_budget_new(&d, out, e);
          })) {}
    // The short form: max and target, then the optional fields in descriptor order.
    Budget(int64_t max_tokens, int64_t target_tokens, int64_t output_reserve = 0,
           const std::vector<ReservedSlot> &reserved_slots = {}, double estimation_safety_margin_percent = 0.0)
        : Budget(BudgetSpec{max_tokens, target_tokens, output_reserve, reserved_slots,
                            estimation_safety_margin_percent}) {}

private:
    explicit Budget(ctxpack_budget *owned) noexcept : Owned(owned) {}
};

// A count-requirement shortfall of a count-quota slicer.
struct Shortfall {
    std::string kind;
    uint64_t required_count = 0;
    uint64_t satisfied_count = 0;
};

namespace detail {
inline Shortfall to_shortfall(const ctxpack_shortfall &s) {
    return Shortfall{std::string(view(s.kind)), s.required_count, s.satisfied_count};
}
}  // namespace detail

// ------------------------------------------------------------------ scorers

class Scorer;

// A child of a composite scorer with its raw weight (normalised by the sum). It refers to
// the Scorer, so it cannot be made from a temporary: `v.push_back({Scorer::recency(), 1})`
// would keep a reference to a Scorer destroyed (its handle freed) at the end of that
// statement, and `Scorer::composite(v)` would pass the freed handle to the library. Keep
// the Scorer in a variable that outlives the composite's construction.
struct WeightedScorer {
    WeightedScorer(const Scorer &scorer, double weight) noexcept : scorer(scorer), weight(weight) {}
    WeightedScorer(Scorer &&, double) = delete;

    const Scorer &scorer;
    double weight;
};

struct KindWeight {
    std::string_view kind;
    double weight;
};

struct TagWeight {
    std::string_view tag;
    double weight;
};

struct DecayWindow {
    std::chrono::nanoseconds max_age;
    double score;
};

// Configuration of a decay scorer. Build it with `exponential`, `window` or `step`, then
// set the clock and the score of undated items if the defaults do not suit.
struct DecayConfig {
    DecayCurve curve = DecayCurve::Exponential;
    std::chrono::nanoseconds half_life{0};  // Exponential
    std::chrono::nanoseconds max_age{0};    // Window
    std::vector<DecayWindow> windows = {};  // Step, youngest first
    // "Now" in nanoseconds since the Unix epoch; unset means the system clock.
    std::optional<int64_t> fixed_now_ns = {};
    // Unset means CTXPACK_DECAY_DEFAULT_NULL_TIMESTAMP_SCORE.
    std::optional<double> null_timestamp_score = {};

    static DecayConfig exponential(std::chrono::nanoseconds half_life) {
        DecayConfig c;
        c.curve = DecayCurve::Exponential;
        c.half_life = half_life;
        return c;
    }
    static DecayConfig window(std::chrono::nanoseconds max_age) {
        DecayConfig c;
        c.curve = DecayCurve::Window;
        c.max_age = max_age;
        return c;
    }
    static DecayConfig step(std::vector<DecayWindow> windows) {
        DecayConfig c;
        c.curve = DecayCurve::Step;
        c.windows = std::move(windows);
        return c;
    }
};

class Scorer : public detail::Shared<ctxpack_scorer, ctxpack_scorer_free, ctxpack_scorer_retain> {
public:
    // Takes ownership of one reference to a scorer made by a C call.
    static Scorer adopt(ctxpack_scorer *owned) noexcept { return Scorer(owned); }

    // KindScorer with the default weights, or with `weights` replacing them.
    static Scorer kind() { return make(ctxpack_scorer_new_kind); }
    static Scorer kind(const std::vector<KindWeight> &weights) {
        std::vector<ctxpack_kind_weight> w;
        for (const KindWeight &k : weights) w.push_back({detail::str(k.kind), k.weight});
        return make([&](ctxpack_scorer **out, ctxpack_error **e) {
            return ctxpack_scorer_new_kind_weights(w.data(), w.size(), out, e);
        });
    }
    static Scorer tag(const std::vector<TagWeight> &weights) {
        std::vector<ctxpack_tag_weight> w;
        for (const TagWeight &t : weights) w.push_back({detail::str(t.tag), t.weight});
        return make([&](ctxpack_scorer **out, ctxpack_error **e) {
            return ctxpack_scorer_new_tag(w.data(), w.size(), out, e);
        });
    }
    // The weighted sum of the children's scores; the composite keeps its own reference to
    // each child.
    static Scorer composite(const std::vector<WeightedScorer> &children) {
        std::vector<ctxpack_composite_child> c;
        for (const WeightedScorer &child : children) c.push_back({child.scorer.native(), child.weight});
        return make([&](ctxpack_scorer **out, ctxpack_error **e) {
            return ctxpack_scorer_new_composite(c.data(), c.size(), out, e);
        });
    }
    // Min-max normalisation of `inner` (kept by reference).
    static Scorer scaled(const Scorer &inner) {
        return make([&](ctxpack_scorer **out, ctxpack_error **e) {
            return ctxpack_scorer_new_scaled(inner.native(), out, e);
        });
    }
    static Scorer decay(const DecayConfig &config) {
        std::vector<ctxpack_decay_window> windows;
        for (const DecayWindow &w : config.windows) windows.push_back({w.max_age.count(), w.score});
        auto c = detail::sized<ctxpack_decay_config>();
        c.curve = static_cast<int32_t>(config.curve);
        c.half_life_ns = config.half_life.count();
        c.max_age_ns = config.max_age.count();
        c.windows = windows.data();
        c.window_count = windows.size();
        c.clock = config.fixed_now_ns ? CTXPACK_CLOCK_KIND_FIXED : CTXPACK_CLOCK_KIND_SYSTEM;
        c.fixed_now_ns = config.fixed_now_ns.value_or(0);
        c.has_null_timestamp_score = config.null_timestamp_score.has_value();
        c.null_timestamp_score = config.null_timestamp_score.value_or(0.0);
        return make([&](ctxpack_scorer **out, ctxpack_error **e) { return ctxpack_scorer_new_decay(&c, out, e); });
    }
    static Scorer metadata_trust(double default_score = CTXPACK_METADATA_TRUST_DEFAULT_SCORE) {
        return make([&](ctxpack_scorer **out, ctxpack_error **e) {
            return ctxpack_scorer_new_metadata_trust(default_score, out, e);
        });
    }
    static Scorer metadata_key(std::string_view key, std::string_view value, double boost) {
        return make([&](ctxpack_scorer **out, ctxpack_error **e) {
            return ctxpack_scorer_new_metadata_key(detail::str(key), detail::str(value), boost, out, e);
        });
    }
    static Scorer recency() { return make(ctxpack_scorer_new_recency); }
    static Scorer priority() { return make(ctxpack_scorer_new_priority); }
    static Scorer frequency() { return make(ctxpack_scorer_new_frequency); }
    static Scorer reflexive() { return make(ctxpack_scorer_new_reflexive); }

    // A scorer called once per item (ctxpack_scorer_new_custom_item).
    static Scorer custom(ScoreItemFn fn) {
        return Scorer(detail::make_custom<ctxpack_scorer>(
            std::move(fn), "Scorer::custom", [](void *ud, ctxpack_destroy_fn destroy, ctxpack_scorer **out,
                                                 ctxpack_error **e) {
                return ctxpack_scorer_new_custom_item(score_item, ud, destroy, out, e);
            }));
    }
    // A scorer called once per run for all items (ctxpack_scorer_new_custom_batch).
    static Scorer custom_batch(ScoreAllFn fn) {
        return Scorer(detail::make_custom<ctxpack_scorer>(
            std::move(fn), "Scorer::custom_batch", [](void *ud, ctxpack_destroy_fn destroy, ctxpack_scorer **out,
                                                      ctxpack_error **e) {
                return ctxpack_scorer_new_custom_batch(score_all, ud, destroy, out, e);
            }));
    }

    // Scores every item of `items` against the whole list, in list order.
    std::vector<double> score(const Items &items) const {
        std::vector<double> scores(items.size());
        detail::call([&](ctxpack_error **e) {
            return ctxpack_scorer_score(native(), items.native(), scores.data(), scores.size(), e);
        });
        return scores;
    }

private:
    explicit Scorer(ctxpack_scorer *owned) noexcept : Shared(owned) {}

    template <typename Ctor>
    static Scorer make(Ctor &&ctor) {
        return Scorer(detail::create<ctxpack_scorer>(std::forward<Ctor>(ctor)));
    }

    static int score_item(void *ud, const ctxpack_item_view *items, std::size_t count, std::size_t index,
                          double *out, ctxpack_callback_error *error) noexcept {
        return detail::guarded(error, [&] {
            *out = detail::callable<ScoreItemFn>(ud)(ItemsView(items, count), index);
        });
    }
    static int score_all(void *ud, const ctxpack_item_view *items, std::size_t count, double *out,
                         ctxpack_callback_error *error) noexcept {
        return detail::guarded(error, [&] {
            detail::callable<ScoreAllFn>(ud)(ItemsView(items, count), Span<double>(out, count));
        });
    }
};

// ------------------------------------------------------------------ slicers

struct QuotaEntry {
    std::string_view kind;
    double require;  // percent of the target, [0, 100]
    double cap;      // percent of the target, [require, 100]
};

struct CountQuotaEntry {
    std::string_view kind;
    std::size_t require_count;
    std::size_t cap_count;
};

// What a slicer run alone returned (positions into its input).
struct SliceOutcome {
    std::vector<std::size_t> selected;
    std::vector<std::size_t> cap_excluded;
    std::vector<Shortfall> shortfalls;
};

class Slicer : public detail::Shared<ctxpack_slicer, ctxpack_slicer_free, ctxpack_slicer_retain> {
public:
    static Slicer adopt(ctxpack_slicer *owned) noexcept { return Slicer(owned); }

    static Slicer greedy() { return make(ctxpack_slicer_new_greedy); }
    // `table_limit_bytes` 0 means the library default (256 MiB).
    static Slicer knapsack(int64_t bucket_size = CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE,
                           uint64_t table_limit_bytes = 0) {
        return make([&](ctxpack_slicer **out, ctxpack_error **e) {
            return ctxpack_slicer_new_knapsack(bucket_size, table_limit_bytes, out, e);
        });
    }
    static Slicer quota(const std::vector<QuotaEntry> &entries, const Slicer &inner) {
        std::vector<ctxpack_quota_entry> q;
        for (const QuotaEntry &entry : entries) q.push_back({detail::str(entry.kind), entry.require, entry.cap});
        return make([&](ctxpack_slicer **out, ctxpack_error **e) {
            return ctxpack_slicer_new_quota(q.data(), q.size(), inner.native(), out, e);
        });
    }
    static Slicer count_quota(const std::vector<CountQuotaEntry> &entries, const Slicer &inner,
                              Scarcity scarcity = Scarcity::Degrade) {
        std::vector<ctxpack_count_quota_entry> q = count_entries(entries);
        return make([&](ctxpack_slicer **out, ctxpack_error **e) {
            return ctxpack_slicer_new_count_quota(q.data(), q.size(), inner.native(), static_cast<int32_t>(scarcity),
                                                  out, e);
        });
    }
    static Slicer count_constrained_knapsack(const std::vector<CountQuotaEntry> &entries,
                                             int64_t bucket_size = CTXPACK_KNAPSACK_DEFAULT_BUCKET_SIZE,
                                             uint64_t table_limit_bytes = 0, Scarcity scarcity = Scarcity::Degrade) {
        std::vector<ctxpack_count_quota_entry> q = count_entries(entries);
        return make([&](ctxpack_slicer **out, ctxpack_error **e) {
            return ctxpack_slicer_new_count_constrained_knapsack(q.data(), q.size(), bucket_size, table_limit_bytes,
                                                                 static_cast<int32_t>(scarcity), out, e);
        });
    }
    static Slicer custom(SliceFn fn) {
        return Slicer(detail::make_custom<ctxpack_slicer>(
            std::move(fn), "Slicer::custom", [](void *ud, ctxpack_destroy_fn destroy, ctxpack_slicer **out,
                                                ctxpack_error **e) {
                return ctxpack_slicer_new_custom(slice_fn, ud, destroy, out, e);
            }));
    }

    // Runs the slicer alone over `items` with one score per item, against `budget`
    // exactly as given (no pinned-item or reserve adjustment). Items with a group are
    // selected whole or not at all, a group being worth its members' scores combined by
    // `group_value`.
    SliceOutcome slice(const Items &items, Span<const double> scores, const Budget &budget,
                       GroupValue group_value = GroupValue::Sum) const {
        ctxpack_slice_result *raw = detail::create<ctxpack_slice_result>(
            [&](ctxpack_slice_result **out, ctxpack_error **e) {
                return ctxpack_slicer_slice_with_group_value(native(), items.native(), scores.data(), scores.size(),
                                                             budget.native(), static_cast<int32_t>(group_value), out,
                                                             e);
            });
        std::unique_ptr<ctxpack_slice_result, void (*)(ctxpack_slice_result *)> result(raw, ctxpack_slice_result_free);
        SliceOutcome outcome;
        const std::size_t *ptr = nullptr;
        std::size_t len = 0;
        detail::check(ctxpack_slice_result_selected(raw, &ptr, &len), "ctxpack_slice_result_selected");
        outcome.selected.assign(ptr, ptr + len);
        detail::check(ctxpack_slice_result_cap_excluded(raw, &ptr, &len), "ctxpack_slice_result_cap_excluded");
        outcome.cap_excluded.assign(ptr, ptr + len);
        detail::check(ctxpack_slice_result_shortfall_count(raw, &len), "ctxpack_slice_result_shortfall_count");
        for (std::size_t i = 0; i < len; i++) {
            auto s = detail::sized<ctxpack_shortfall>();
            detail::call([&](ctxpack_error **e) { return ctxpack_slice_result_shortfall(raw, i, &s, e); });
            outcome.shortfalls.push_back(detail::to_shortfall(s));
        }
        return outcome;
    }

private:
    explicit Slicer(ctxpack_slicer *owned) noexcept : Shared(owned) {}

    template <typename Ctor>
    static Slicer make(Ctor &&ctor) {
        return Slicer(detail::create<ctxpack_slicer>(std::forward<Ctor>(ctor)));
    }
    static std::vector<ctxpack_count_quota_entry> count_entries(const std::vector<CountQuotaEntry> &entries) {
        std::vector<ctxpack_count_quota_entry> q;
        for (const CountQuotaEntry &entry : entries) {
            q.push_back({detail::str(entry.kind), entry.require_count, entry.cap_count});
        }
        return q;
    }
    static int slice_fn(void *ud, const ctxpack_item_view *items, const double *scores, std::size_t count,
                        int64_t target_tokens, int64_t max_tokens, std::size_t *out_positions,
                        std::size_t *out_count, ctxpack_callback_error *error) noexcept {
        return detail::guarded(error, [&] {
            std::vector<std::size_t> chosen = detail::callable<SliceFn>(ud)(
                ItemsView(items, count), Span<const double>(scores, count), target_tokens, max_tokens);
            detail::copy_positions(chosen, out_positions, count, "custom slicer");
            *out_count = chosen.size();
        });
    }
};

// ------------------------------------------------------------------ placers

class Placer : public detail::Shared<ctxpack_placer, ctxpack_placer_free, ctxpack_placer_retain> {
public:
    static Placer adopt(ctxpack_placer *owned) noexcept { return Placer(owned); }

    static Placer chronological() { return make(ctxpack_placer_new_chronological); }
    static Placer u_shaped() { return make(ctxpack_placer_new_u_shaped); }
    static Placer custom(PlaceFn fn) {
        return Placer(detail::make_custom<ctxpack_placer>(
            std::move(fn), "Placer::custom", [](void *ud, ctxpack_destroy_fn destroy, ctxpack_placer **out,
                                                ctxpack_error **e) {
                return ctxpack_placer_new_custom(place_fn, ud, destroy, out, e);
            }));
    }

    // Runs the placer alone: the placement order of `items` (a permutation of positions).
    // (The members of a group end up next to each other, in list order.)
    std::vector<std::size_t> place(const Items &items, Span<const double> scores,
                                   GroupValue group_value = GroupValue::Sum) const {
        std::vector<std::size_t> order(scores.size());
        detail::call([&](ctxpack_error **e) {
            return ctxpack_placer_place_with_group_value(native(), items.native(), scores.data(), scores.size(),
                                                         static_cast<int32_t>(group_value), order.data(), e);
        });
        return order;
    }

private:
    explicit Placer(ctxpack_placer *owned) noexcept : Shared(owned) {}

    template <typename Ctor>
    static Placer make(Ctor &&ctor) {
        return Placer(detail::create<ctxpack_placer>(std::forward<Ctor>(ctor)));
    }
    static int place_fn(void *ud, const ctxpack_item_view *items, const double *scores, std::size_t count,
                        std::size_t *out_order, ctxpack_callback_error *error) noexcept {
        return detail::guarded(error, [&] {
            std::vector<std::size_t> order =
                detail::callable<PlaceFn>(ud)(ItemsView(items, count), Span<const double>(scores, count));
            if (order.size() != count) {
                throw std::length_error("custom placer returned " + std::to_string(order.size()) +
                                        " positions for " + std::to_string(count) + " items");
            }
            detail::copy_positions(order, out_order, count, "custom placer");
        });
    }
};

// ------------------------------------------------------------------ results and reports

struct ReportSummary {
    std::size_t included_count = 0;
    std::size_t excluded_count = 0;
    std::size_t event_count = 0;
    std::size_t shortfall_count = 0;
    std::size_t total_candidates = 0;
    int64_t total_tokens_considered = 0;
    // Whether the exact total did not fit in 64 bits (then the nearest value is above).
    bool total_tokens_saturated = false;
    std::size_t group_count = 0;
};

struct IncludedEntry {
    std::size_t index = 0;  // position in the caller's item list
    double score = 0.0;
    InclusionReason reason = InclusionReason::Scored;
    std::size_t form = 0;  // the form placed: 0 in full, f >= 1 the item's variants[f - 1]
    // Downgraded: the item's own tokens, the placed form's, the tokens left unused when
    // the form was chosen, and why.
    int64_t full_tokens = 0;
    int64_t chosen_tokens = 0;
    int64_t available_tokens = 0;
    DowngradeCause cause = DowngradeCause::None;
};

// A variant no selection could need: another form of the item has no more tokens and at
// least its quality.
struct PrunedForm {
    std::size_t index = 0;  // the item's position
    std::size_t form = 0;   // the pruned form (>= 1)
    std::size_t dominated_by = 0;
};

// An excluded item with its reason and every field of the reason (the fields of other
// reasons are zero or empty). The strings are copies.
struct ExcludedEntry {
    std::size_t index = 0;
    double score = 0.0;
    ExclusionReason reason = ExclusionReason::Unknown;
    std::string name;                  // the wire name, "BudgetExceeded", ...
    int64_t item_tokens = 0;           // BudgetExceeded
    int64_t available_tokens = 0;      // BudgetExceeded
    double reason_score = 0.0;         // ScoredTooLow
    double threshold = 0.0;            // ScoredTooLow
    std::string deduplicated_against;  // Deduplicated
    std::string kind;                  // QuotaCapExceeded, CountCapExceeded, CountRequireCandidatesExhausted
    int64_t cap = 0;                   // QuotaCapExceeded
    int64_t actual = 0;                // QuotaCapExceeded
    std::string displaced_by_kind;     // QuotaRequireDisplaced
    int64_t tokens = 0;                // NegativeTokens
    std::string displaced_by;          // PinnedOverride
    std::string filter_name;           // Filtered
    uint64_t count_cap = 0;            // CountCapExceeded
    uint64_t count = 0;                // CountCapExceeded
    std::string group;                 // GroupExcluded: the group key
    std::size_t member_index = 0;      // GroupExcluded: the member whose exclusion took the group out
    std::string member_content;        // GroupExcluded: that member's content
    std::string member_reason;         // GroupExcluded: that member's reason (wire name)
};

// One group of a traced run's input (docs/groups.md), in order of its first member.
struct GroupEntry {
    std::string key;
    std::vector<std::size_t> members;  // positions in the caller's list, in list order
    int64_t tokens = 0;                // the members' tokens added
    std::optional<double> value;       // none for a pinned group and one excluded at Classify
    GroupDecision decision = GroupDecision::Included;
    PipelineStage stage = PipelineStage::Classify;  // Excluded: the stage that excluded it
    std::size_t member_index = 0;      // Excluded: the member whose exclusion took the group out
    std::optional<std::size_t> pinned_by;  // the first pinned member, when it pinned the group
    bool partial_selection = false;    // a slicer returned only some of the members
};

struct TraceEvent {
    PipelineStage stage = PipelineStage::Classify;
    double duration_ms = 0.0;
    std::size_t item_count = 0;
    std::optional<std::string> message;
    std::optional<std::size_t> item_index;  // item events only
};

// The overflow event of a Proceed run over target. `items` points into the result.
struct Overflow {
    int64_t tokens_over_budget = 0;
    Span<const std::size_t> items;
};

// Whether a quota counts percent of the budget's target or items.
enum class QuotaMode : int32_t {
    Percentage = CTXPACK_QUOTA_MODE_PERCENTAGE,
    Count = CTXPACK_QUOTA_MODE_COUNT,
};

// How fully one quota constraint of the run's slicer is used (`Result::quota_utilization`).
struct KindQuotaUtilization {
    std::string kind;  // as configured
    QuotaMode mode = QuotaMode::Percentage;
    double require = 0.0;  // percent of the target, or a count
    double cap = 0.0;      // percent of the target, or a count
    // The included tokens of the kind in percent of the target, or its included items.
    double actual = 0.0;
    // `actual / cap` clamped to [0, 1]; 0 when the cap is 0.
    double utilization = 0.0;
};

// Every report helper of a traced result at once (spec 07 §7; `Result::analytics`).
struct Analytics {
    // The included tokens over the run's `max_tokens` (not clamped; 0 when it is 0).
    double budget_utilization = 0.0;
    // The number of distinct kinds (ASCII case-insensitive) among the included items.
    std::size_t kind_diversity = 0;
    // The share of included items that have a timestamp, in [0, 1].
    double timestamp_coverage = 0.0;
    // One entry per quota constraint of the run's slicer, sorted by kind (none for a
    // slicer without quotas).
    std::vector<KindQuotaUtilization> quota_utilization;
};

// The outcome of a run: immutable, readable from many threads, independent of the
// pipeline and item list it came from. The report accessors throw Status::NoReport for
// an untraced run. Spans and the JSON view point into the result: the `&&` overloads are
// deleted so that they cannot be taken from a temporary.
class Result : public detail::Owned<ctxpack_result, ctxpack_result_free> {
public:
    explicit Result(ctxpack_result *owned) noexcept : Owned(owned) {}

    // The selected items as positions in the caller's list, in placed order.
    Span<const std::size_t> indices() const & {
        return array<std::size_t>(ctxpack_result_indices, "ctxpack_result_indices");
    }
    Span<const std::size_t> indices() const && = delete;
    // Their scores (1.0 for pinned items), parallel to `indices()`.
    Span<const double> scores() const & { return array<double>(ctxpack_result_scores, "ctxpack_result_scores"); }
    Span<const double> scores() const && = delete;
    std::vector<InclusionReason> reasons() const {
        std::vector<InclusionReason> out;
        for (int32_t r : array<int32_t>(ctxpack_result_reasons, "ctxpack_result_reasons")) {
            out.push_back(static_cast<InclusionReason>(r));
        }
        return out;
    }
    // The form of each placed item, parallel to `indices()`: 0 in full, f >= 1 its
    // variants[f - 1] (whose content and tokens go into the window).
    Span<const std::size_t> forms() const & {
        return array<std::size_t>(ctxpack_result_forms, "ctxpack_result_forms");
    }
    Span<const std::size_t> forms() const && = delete;
    std::optional<Overflow> overflow() const & {
        bool present = false;
        Overflow o;
        const std::size_t *items = nullptr;
        std::size_t count = 0;
        detail::check(ctxpack_result_overflow(native(), &present, &o.tokens_over_budget, &items, &count),
                      "ctxpack_result_overflow");
        if (!present) return std::nullopt;
        o.items = Span<const std::size_t>(items, count);
        return o;
    }
    std::optional<Overflow> overflow() const && = delete;

    bool has_report() const {
        bool has = false;
        detail::check(ctxpack_result_has_report(native(), &has), "ctxpack_result_has_report");
        return has;
    }
    ReportSummary summary() const {
        auto s = detail::sized<ctxpack_report_summary>();
        detail::call([&](ctxpack_error **e) { return ctxpack_result_report_summary(native(), &s, e); });
        return ReportSummary{s.included_count,   s.excluded_count,          s.event_count,
                             s.shortfall_count,  s.total_candidates,        s.total_tokens_considered,
                             s.total_tokens_saturated, s.group_count};
    }

    IncludedEntry included(std::size_t i) const {
        auto e = entry<ctxpack_included_entry>(ctxpack_result_report_included, i, "ctxpack_result_report_included");
        return IncludedEntry{e.index,         e.score,         static_cast<InclusionReason>(e.reason),
                             e.form,          e.full_tokens,   e.chosen_tokens,
                             e.available_tokens, static_cast<DowngradeCause>(e.cause)};
    }
    ExcludedEntry excluded(std::size_t i) const {
        auto e = entry<ctxpack_excluded_entry>(ctxpack_result_report_excluded, i, "ctxpack_result_report_excluded");
        using detail::view;
        ExcludedEntry x;
        x.index = e.index;
        x.score = e.score;
        x.reason = static_cast<ExclusionReason>(e.reason);
        x.name = view(e.name);
        x.item_tokens = e.item_tokens;
        x.available_tokens = e.available_tokens;
        x.reason_score = e.reason_score;
        x.threshold = e.threshold;
        x.deduplicated_against = view(e.deduplicated_against);
        x.kind = view(e.kind);
        x.cap = e.cap;
        x.actual = e.actual;
        x.displaced_by_kind = view(e.displaced_by_kind);
        x.tokens = e.tokens;
        x.displaced_by = view(e.displaced_by);
        x.filter_name = view(e.filter_name);
        x.count_cap = e.count_cap;
        x.count = e.count;
        x.group = view(e.group);
        x.member_index = e.member_index;
        x.member_content = view(e.member_content);
        x.member_reason = view(e.member_reason);
        return x;
    }
    GroupEntry group(std::size_t i) const {
        auto g = entry<ctxpack_group_entry>(ctxpack_result_report_group, i, "ctxpack_result_report_group");
        GroupEntry x;
        x.key = detail::view(g.key);
        x.members.assign(g.members, g.members + g.member_count);
        x.tokens = g.tokens;
        if (g.has_value) x.value = g.value;
        x.decision = static_cast<GroupDecision>(g.decision);
        x.stage = static_cast<PipelineStage>(g.stage);
        x.member_index = g.member_index;
        if (g.has_pinned_by) x.pinned_by = g.pinned_by;
        x.partial_selection = g.partial_selection;
        return x;
    }
    TraceEvent event(std::size_t i) const {
        auto e = entry<ctxpack_trace_event>(ctxpack_result_report_event, i, "ctxpack_result_report_event");
        TraceEvent t;
        t.stage = static_cast<PipelineStage>(e.stage);
        t.duration_ms = e.duration_ms;
        t.item_count = e.item_count;
        if (e.has_message) t.message = std::string(detail::view(e.message));
        if (e.has_item_index) t.item_index = e.item_index;
        return t;
    }
    Shortfall shortfall(std::size_t i) const {
        return detail::to_shortfall(
            entry<ctxpack_shortfall>(ctxpack_result_report_shortfall, i, "ctxpack_result_report_shortfall"));
    }

    PrunedForm pruned_form(std::size_t i) const {
        auto p = entry<ctxpack_pruned_form>(ctxpack_result_report_pruned_form, i, "ctxpack_result_report_pruned_form");
        return PrunedForm{p.index, p.form, p.dominated_by};
    }
    std::vector<PrunedForm> pruned_forms() const {
        auto s = detail::sized<ctxpack_report_summary>();
        detail::call([&](ctxpack_error **e) { return ctxpack_result_report_summary(native(), &s, e); });
        return all(s.pruned_form_count, &Result::pruned_form);
    }
    std::vector<IncludedEntry> included() const { return all(summary().included_count, &Result::included); }
    std::vector<ExcludedEntry> excluded() const { return all(summary().excluded_count, &Result::excluded); }
    std::vector<TraceEvent> events() const { return all(summary().event_count, &Result::event); }
    std::vector<Shortfall> shortfalls() const { return all(summary().shortfall_count, &Result::shortfall); }
    std::vector<GroupEntry> groups() const { return all(summary().group_count, &Result::group); }

    // Report helpers (spec 07 §7), computed when asked from the report and the run's
    // budget and slicer, which the result keeps. Each throws Status::NoReport on an
    // untraced result.
    //
    // The included tokens over the run's `max_tokens` (not clamped; 0 when it is 0).
    double budget_utilization() const {
        return detail::get<double>(ctxpack_result_budget_utilization, native(), "ctxpack_result_budget_utilization");
    }
    // The number of distinct kinds (ASCII case-insensitive) among the included items.
    std::size_t kind_diversity() const {
        return detail::get<std::size_t>(ctxpack_result_kind_diversity, native(), "ctxpack_result_kind_diversity");
    }
    // The share of included items that have a timestamp, in [0, 1] (0 when none is).
    double timestamp_coverage() const {
        return detail::get<double>(ctxpack_result_timestamp_coverage, native(), "ctxpack_result_timestamp_coverage");
    }
    // How fully each quota constraint of the run's slicer is used, sorted by kind: a
    // percentage quota slicer's entries in percent, a count-quota slicer's in items; none
    // for any other slicer (wrapped slicers are not searched).
    std::vector<KindQuotaUtilization> quota_utilization() const {
        ctxpack_quota_utilization *raw = detail::create<ctxpack_quota_utilization>(
            [&](ctxpack_quota_utilization **out, ctxpack_error **e) {
                return ctxpack_result_quota_utilization(native(), out, e);
            });
        std::unique_ptr<ctxpack_quota_utilization, void (*)(ctxpack_quota_utilization *)> owned(
            raw, ctxpack_quota_utilization_free);
        std::size_t n = 0;
        detail::check(ctxpack_quota_utilization_count(raw, &n), "ctxpack_quota_utilization_count");
        std::vector<KindQuotaUtilization> out;
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            auto u = detail::sized<ctxpack_kind_quota_utilization>();
            detail::call([&](ctxpack_error **e) { return ctxpack_quota_utilization_entry(raw, i, &u, e); });
            out.push_back({std::string(detail::view(u.kind)), static_cast<QuotaMode>(u.mode), u.require, u.cap,
                           u.actual, u.utilization});
        }
        return out;
    }
    // The four report helpers together.
    Analytics analytics() const {
        return Analytics{budget_utilization(), kind_diversity(), timestamp_coverage(), quota_utilization()};
    }

    // The report in the JSON wire form of spec 06 §10, owned by the result.
    std::string_view json() const & {
        ctxpack_str s{};
        detail::check(ctxpack_result_report_json(native(), &s), "ctxpack_result_report_json");
        return detail::view(s);
    }
    std::string_view json() const && = delete;

private:
    template <typename T, typename F>
    Span<const T> array(F f, const char *what) const {
        const T *ptr = nullptr;
        std::size_t len = 0;
        detail::check(f(native(), &ptr, &len), what);
        return Span<const T>(ptr, len);
    }
    // A report entry: a growing struct the library fills.
    template <typename T, typename F>
    T entry(F f, std::size_t i, const char *what) const {
        (void)what;
        auto out = detail::sized<T>();
        detail::call([&](ctxpack_error **e) { return f(native(), i, &out, e); });
        return out;
    }
    template <typename T>
    std::vector<T> all(std::size_t count, T (Result::*one)(std::size_t) const) const {
        std::vector<T> out;
        out.reserve(count);
        for (std::size_t i = 0; i < count; i++) out.push_back((this->*one)(i));
        return out;
    }
};

// ------------------------------------------------------------------ pipeline

struct PipelineOptions {
    bool deduplication = true;
    OverflowStrategy overflow_strategy = OverflowStrategy::Throw;
    // How a group's value is computed (matters only when items have groups).
    GroupValue group_value = GroupValue::Sum;
    // Place the pinned items first, in input order, before everything the placer orders.
    bool pinned_first = false;
    // Use the items' variants (docs/variants.md); false: every item in full or not at all.
    bool use_variants = true;
};

// A cancellation flag for runs (`ctxpack_cancel_token`): put its address in
// `RunOptions::cancel`, then `cancel()` from any thread stops the run, which throws
// `Error` with `Status::Cancelled`. It stays cancelled; one token may serve many runs.
// Move-only; every member is thread-safe, and destroying it while a run uses it is
// allowed (the run holds its own reference).
class CancelToken : public detail::Owned<ctxpack_cancel_token, ctxpack_cancel_token_free> {
public:
    CancelToken() : Owned(detail::create<ctxpack_cancel_token>(ctxpack_cancel_token_new)) {}
    // Cancels every run using this token, now and later.
    void cancel() const { detail::check(ctxpack_cancel_token_cancel(native()), "ctxpack_cancel_token_cancel"); }
    bool is_cancelled() const {
        uint8_t out = 0;
        detail::check(ctxpack_cancel_token_is_cancelled(native(), &out), "ctxpack_cancel_token_is_cancelled");
        return out != 0;
    }
};

// What a prefix run does with the previous turn's window (docs/prefix-cache.md).
enum class PrefixMode : int32_t {
    Hold = CTXPACK_PREFIX_MODE_HOLD,
    Measure = CTXPACK_PREFIX_MODE_MEASURE,
};

// How a prefix run's turn went.
enum class TurnOutcome : int32_t {
    Measured = CTXPACK_TURN_OUTCOME_MEASURED,
    Held = CTXPACK_TURN_OUTCOME_HELD,
    Anchored = CTXPACK_TURN_OUTCOME_ANCHORED,
    Reanchored = CTXPACK_TURN_OUTCOME_REANCHORED,
};

// Why the new window stops matching the previous one.
enum class DifferenceReason : int32_t {
    Removed = CTXPACK_DIFFERENCE_REASON_REMOVED,
    Edited = CTXPACK_DIFFERENCE_REASON_EDITED,
    Reordered = CTXPACK_DIFFERENCE_REASON_REORDERED,
    Inserted = CTXPACK_DIFFERENCE_REASON_INSERTED,
    Budget = CTXPACK_DIFFERENCE_REASON_BUDGET,
    GroupChanged = CTXPACK_DIFFERENCE_REASON_GROUP_CHANGED,
};

// A prefix state: what a turn placed, for the next turn. Immutable; store it with
// `bytes()` (or `json()`) and read it back with `from_bytes` (or `from_json`), which throw
// Status::InvalidState for anything but a valid state of a version this library reads.
class PrefixState : public detail::Owned<ctxpack_prefix_state, ctxpack_prefix_state_free> {
public:
    explicit PrefixState(ctxpack_prefix_state *owned) noexcept : Owned(owned) {}

    static PrefixState from_bytes(const std::vector<uint8_t> &bytes) {
        return PrefixState(detail::create<ctxpack_prefix_state>([&](ctxpack_prefix_state **out, ctxpack_error **e) {
            return ctxpack_prefix_state_from_bytes(bytes.data(), bytes.size(), out, e);
        }));
    }
    static PrefixState from_json(std::string_view json) {
        return PrefixState(detail::create<ctxpack_prefix_state>([&](ctxpack_prefix_state **out, ctxpack_error **e) {
            return ctxpack_prefix_state_from_json(detail::str(json), out, e);
        }));
    }

    std::vector<uint8_t> bytes() const {
        std::size_t len = 0;
        detail::check(ctxpack_prefix_state_to_bytes(native(), nullptr, 0, &len), "ctxpack_prefix_state_to_bytes");
        std::vector<uint8_t> out(len);
        detail::check(ctxpack_prefix_state_to_bytes(native(), out.data(), out.size(), &len),
                      "ctxpack_prefix_state_to_bytes");
        return out;
    }
    std::string json() const {
        ctxpack_string *raw = detail::create<ctxpack_string>([&](ctxpack_string **out, ctxpack_error **e) {
            return ctxpack_prefix_state_json(native(), out, e);
        });
        std::unique_ptr<ctxpack_string, void (*)(ctxpack_string *)> owned(raw, ctxpack_string_free);
        ctxpack_str text{};
        detail::check(ctxpack_string_value(raw, &text), "ctxpack_string_value");
        return std::string(detail::view(text));
    }
    // The turn number (1 for the first turn of a chain).
    uint64_t turn() const { return info().turn; }
    // Items of the state's window.
    std::size_t entries() const { return info().entries; }
    // Their tokens.
    int64_t tokens() const { return info().tokens; }

private:
    struct Info {
        uint64_t turn = 0;
        std::size_t entries = 0;
        int64_t tokens = 0;
    };
    Info info() const {
        Info i;
        detail::check(ctxpack_prefix_state_info(native(), &i.turn, &i.entries, &i.tokens), "ctxpack_prefix_state_info");
        return i;
    }
};

// Options of a prefix run; the defaults are Hold, no key, no caching rule, the default
// thresholds.
struct PrefixOptions {
    PrefixMode mode = PrefixMode::Hold;
    // Names the conversation (any bytes; empty for none).
    std::string conversation;
    // "" or "none", "openai", "anthropic", "anthropic:MIN", "vllm", "blocks:N".
    std::string cache_rule;
    // Hold's thresholds; unset: 0.05 and 0.8.
    std::optional<double> max_value_loss;
    std::optional<double> low_watermark;
};

// Where and why the new window stops matching the previous one.
struct Difference {
    std::size_t index = 0;
    DifferenceReason reason = DifferenceReason::Removed;
    // The input position of the new window's item there; unset when the window ends there.
    std::optional<std::size_t> item;
    uint32_t previous_position = 0;
};

// The reuse report of a prefix run (docs/prefix-cache.md §4).
struct Reuse {
    PrefixMode mode = PrefixMode::Hold;
    TurnOutcome outcome = TurnOutcome::Measured;
    uint64_t turn = 0, turns_since_anchor = 0;
    std::size_t previous_entries = 0, window_entries = 0, kept_entries = 0;
    int64_t previous_tokens = 0, window_tokens = 0, kept_tokens = 0, cached_tokens = 0, anchor_target = 0;
    double fresh_value = 0, value = 0, value_given_up = 0;
    std::optional<Difference> difference;
    // The report's JSON form.
    std::string json;
};

namespace detail {
// The C form of `prefix` (its strings point into `prefix`).
inline ctxpack_prefix_options prefix_options(const PrefixOptions &prefix) {
    auto p = sized<ctxpack_prefix_options>();
    p.mode = static_cast<int32_t>(prefix.mode);
    p.conversation = str(prefix.conversation);
    p.cache_rule = str(prefix.cache_rule);
    if (prefix.max_value_loss || prefix.low_watermark) {
        p.custom_thresholds = 1;
        p.max_value_loss = prefix.max_value_loss.value_or(0.05);
        p.low_watermark = prefix.low_watermark.value_or(0.8);
    }
    return p;
}

// A reuse report read with `fill` (the struct) and `json` (its JSON form), for prefix runs
// and chat trims alike.
template <typename Fill, typename Json>
Reuse read_reuse(Fill fill, Json json) {
    auto r = sized<ctxpack_prefix_reuse>();
    call([&](ctxpack_error **e) { return fill(&r, e); });
    Reuse u;
    u.mode = static_cast<PrefixMode>(r.mode);
    u.outcome = static_cast<TurnOutcome>(r.outcome);
    u.turn = r.turn;
    u.turns_since_anchor = r.turns_since_anchor;
    u.previous_entries = r.previous_entries;
    u.previous_tokens = r.previous_tokens;
    u.window_entries = r.window_entries;
    u.window_tokens = r.window_tokens;
    u.kept_entries = r.kept_entries;
    u.kept_tokens = r.kept_tokens;
    u.cached_tokens = r.cached_tokens;
    u.anchor_target = r.anchor_target;
    u.fresh_value = r.fresh_value;
    u.value = r.value;
    u.value_given_up = r.value_given_up;
    if (r.has_difference) {
        Difference d;
        d.index = r.difference_index;
        d.reason = static_cast<DifferenceReason>(r.difference_reason);
        if (r.difference_item != SIZE_MAX) d.item = r.difference_item;
        d.previous_position = r.difference_previous_position;
        u.difference = d;
    }
    ctxpack_string *raw = create<ctxpack_string>(json);
    std::unique_ptr<ctxpack_string, void (*)(ctxpack_string *)> owned(raw, ctxpack_string_free);
    ctxpack_str text{};
    check(ctxpack_string_value(raw, &text), "ctxpack_string_value");
    u.json = std::string(view(text));
    return u;
}
}  // namespace detail

// The outcome of `Pipeline::run_prefix`.
struct PrefixRun {
    Result result;
    Reuse reuse;
    PrefixState state;
};

struct RunOptions {
    TraceDetail trace = TraceDetail::None;
    // When set, cancelling this token stops the run (Status::Cancelled). It must outlive
    // the call to `run`.
    const CancelToken *cancel = nullptr;
    // Called when a Proceed run goes over target. If it throws, the run still completes
    // (the ABI's overflow callback cannot fail) and `run` rethrows the exception.
    OverflowFn on_overflow = {};
};

// Scorer + slicer + placer + options; immutable, runnable from many threads at once.
class Pipeline : public detail::Shared<ctxpack_pipeline, ctxpack_pipeline_free, ctxpack_pipeline_retain> {
public:
    // The pipeline keeps its own reference to each component.
    Pipeline(const Scorer &scorer, const Slicer &slicer, const Placer &placer, const PipelineOptions &options = {})
        : Shared(detail::create<ctxpack_pipeline>([&](ctxpack_pipeline **out, ctxpack_error **e) {
              auto o = detail::sized<ctxpack_pipeline_options>();
              o.deduplication = options.deduplication;
              o.overflow_strategy = static_cast<int32_t>(options.overflow_strategy);
              o.group_value = static_cast<int32_t>(options.group_value);
              o.pinned_first = options.pinned_first;
              o.no_variants = !options.use_variants;
              return ctxpack_pipeline_new(scorer.native(), slicer.native(), placer.native(), &o, out, e);
          })) {}

    // The pipeline of a preset (spec 07 §2): `"Chat"`, `"code-review"`, ... (any ASCII
    // case, with or without separators); see `presets()`.
    static Pipeline preset(std::string_view name) {
        return Pipeline(detail::create<ctxpack_pipeline>([&](ctxpack_pipeline **out, ctxpack_error **e) {
            return ctxpack_pipeline_new_preset(detail::str(name), out, e);
        }));
    }

    // A pipeline from a policy in JSON (docs/policy-json.md). Structural problems are
    // Status::InvalidPolicy, with the JSON path of the bad field first in the message.
    static Pipeline from_policy_json(std::string_view json) {
        return Pipeline(detail::create<ctxpack_pipeline>([&](ctxpack_pipeline **out, ctxpack_error **e) {
            return ctxpack_pipeline_new_policy_json(detail::str(json), out, e);
        }));
    }

    // A pipeline from a policy in JSON read with `options` (strict or lenient reading,
    // host scorer types); the warnings of a lenient read are stored in `*warnings` when
    // it is not null. Defined with JsonReadOptions, after this class.
    static Pipeline from_policy_json(std::string_view json, const JsonReadOptions &options,
                                     std::vector<JsonWarning> *warnings = nullptr);

    // The pipeline's policy as JSON (Status::InvalidPolicy for custom components).
    std::string policy_json(bool pretty = false) const {
        return detail::take_string(detail::create<ctxpack_string>([&](ctxpack_string **out, ctxpack_error **e) {
            return ctxpack_pipeline_policy_json(native(), pretty, out, e);
        }));
    }

    // The run traced at Item detail, whose result always has a report (spec 07 §4).
    Result dry_run(const Items &items, const Budget &budget) const {
        return Result(detail::create<ctxpack_result>([&](ctxpack_result **out, ctxpack_error **e) {
            return ctxpack_pipeline_dry_run(native(), items.native(), budget.native(), out, e);
        }));
    }

    // Budget simulation (spec 07 §5.1): the items included under `budget` that drop out
    // when it shrinks by `slack` tokens (both its max and target), as positions in
    // `items` in placed order. `slack` 0 gives none; a negative slack grows the budget. A
    // percentage quota slicer is Status::PipelineConfig (its inclusion is not monotonic);
    // a budget that cannot shrink that far is Status::InvalidBudget.
    std::vector<std::size_t> marginal_items(const Items &items, const Budget &budget, int64_t slack) const {
        std::vector<std::size_t> positions(items.size());
        std::size_t n = 0;
        detail::call([&](ctxpack_error **e) {
            return ctxpack_pipeline_marginal_items(native(), items.native(), budget.native(), slack,
                                                   positions.data(), positions.size(), &n, e);
        });
        positions.resize(n);
        return positions;
    }

    // Budget simulation (spec 07 §5.2): the smallest budget (max = target = b, no reserve,
    // slots or margin) in [tokens of items[target], ceiling] at which the item at position
    // `target` is included; none when not even `ceiling` includes it. Quota slicers are
    // Status::PipelineConfig; a `target` outside the list or a `ceiling` below the item's
    // tokens is Status::InvalidArgument.
    std::optional<int64_t> min_budget_for(const Items &items, std::size_t target, int64_t ceiling) const {
        bool found = false;
        int64_t budget = 0;
        detail::call([&](ctxpack_error **e) {
            return ctxpack_pipeline_min_budget_for(native(), items.native(), target, ceiling, &found, &budget, e);
        });
        if (!found) return std::nullopt;
        return budget;
    }

    Result run(const Items &items, const Budget &budget, const RunOptions &options = {}) const {
        return run_with(options, [&](const ctxpack_run_options *o, ctxpack_result **out, ctxpack_error **e) {
            return ctxpack_pipeline_run(native(), items.native(), budget.native(), o, out, e);
        });
    }

    // Runs once over `items` without an item list (the library's one-shot run,
    // `ctxpack_pipeline_run_descs`): the bytes the items borrow are copied once, before the
    // run starts, and no list is kept; they must stay alive for the call only. Result
    // indices are positions in `items`.
    Result run_once(const std::vector<ItemRef> &items, const Budget &budget, const RunOptions &options = {}) const {
        detail::RefDescriptors descs(items.data(), items.size());
        return run_with(options, [&](const ctxpack_run_options *o, ctxpack_result **out, ctxpack_error **e) {
            return ctxpack_pipeline_run_descs(native(), descs.data(), descs.size(), budget.native(), o, out, e);
        });
    }

    // `run_once` over owned items.
    Result run_once(const std::vector<Item> &items, const Budget &budget, const RunOptions &options = {}) const {
        std::vector<ItemRef> refs;
        refs.reserve(items.size());
        for (const Item &item : items) refs.push_back(detail::borrow(item));
        return run_once(refs, budget, options);
    }

    // Frees the memory the pipeline keeps for its one-shot runs (`run_once`; the library's
    // `ctxpack_pipeline_release_memory`). After a one-shot run of at most 131 072 items the
    // pipeline keeps that run's buffers for the next one (about 170 bytes per item of the
    // largest kept run for an agent pipeline; numbers only, never the items' text); this
    // frees them, and the next one-shot run allocates them again. Results are unaffected
    // (`run_once_into` keeps its memory in its `Result`). Safe at any time from any
    // thread, during runs too: a run in progress keeps what it holds until it returns. An
    // empty (moved-from) pipeline throws `Error` with `Status::NullArgument`.
    void release_memory() const {
        detail::check(ctxpack_pipeline_release_memory(native()), "ctxpack_pipeline_release_memory");
    }

    // `run_once` into `result`, reusing its memory (the library's
    // `ctxpack_pipeline_run_descs_into`): an empty `result` (`Result(nullptr)`) gets a new
    // result; otherwise that result is rewritten, so spans read from it before are invalid.
    // From the third run of a size on, the library allocates nothing for the run
    // (docs/ffi.md, "Reusing a result"). On an exception `result` still holds the earlier
    // run's result.
    void run_once_into(Result &result, const std::vector<ItemRef> &items, const Budget &budget,
                       const RunOptions &options = {}) const {
        detail::RefDescriptors descs(items.data(), items.size());
        ctxpack_result *raw = result.native();
        with_options(options, [&](const ctxpack_run_options *o) {
            detail::call([&](ctxpack_error **e) {
                return ctxpack_pipeline_run_descs_into(native(), descs.data(), descs.size(), budget.native(), o,
                                                       &raw, e);
            });
            if (raw != result.native()) {
                // A new result; the library released the earlier one.
                result.release();
                result = Result(raw);
            }
        });
    }

    // A run with the previous turn's prefix state (none on a first turn): the result,
    // the reuse report and this turn's state (docs/prefix-cache.md).
    PrefixRun run_prefix(const Items &items, const Budget &budget, const PrefixOptions &prefix = {},
                         const PrefixState *previous = nullptr, const RunOptions &options = {}) const {
        OverflowContext context{&options.on_overflow, nullptr};
        auto o = detail::sized<ctxpack_run_options>();
        o.trace_detail = static_cast<int32_t>(options.trace);
        if (options.on_overflow) {
            o.on_overflow = &on_overflow;
            o.overflow_user_data = &context;
        }
        if (options.cancel) o.cancel = options.cancel->native();
        ctxpack_prefix_options p = detail::prefix_options(prefix);
        ctxpack_result *raw_result = nullptr;
        ctxpack_prefix_state *raw_state = nullptr;
        detail::call([&](ctxpack_error **e) {
            return ctxpack_pipeline_run_prefix(native(), items.native(), budget.native(), &o, &p,
                                               previous ? previous->native() : nullptr, &raw_result,
                                               &raw_state, e);
        });
        PrefixRun run{Result(raw_result), Reuse{}, PrefixState(raw_state)};
        if (context.error) std::rethrow_exception(context.error);
        run.reuse = detail::read_reuse(
            [&](ctxpack_prefix_reuse *r, ctxpack_error **e) { return ctxpack_result_prefix_reuse(raw_result, r, e); },
            [&](ctxpack_string **out, ctxpack_error **e) {
                return ctxpack_result_prefix_reuse_json(raw_result, out, e);
            });
        return run;
    }

private:
    // A run through `call` with the C form of `options` (the overflow callback's context
    // lives for the call; its exception is rethrown after the result is made).
    template <typename Call>
    Result run_with(const RunOptions &options, Call call) const {
        std::optional<Result> result;
        with_options(options, [&](const ctxpack_run_options *o) {
            result.emplace(detail::create<ctxpack_result>(
                [&](ctxpack_result **out, ctxpack_error **e) { return call(o, out, e); }));
        });
        return std::move(*result);
    }

    // Calls `call` with the C form of `options` (the overflow callback's context lives for
    // the call; its exception is rethrown after `call` returns).
    template <typename Call>
    void with_options(const RunOptions &options, Call call) const {
        OverflowContext context{&options.on_overflow, nullptr};
        auto o = detail::sized<ctxpack_run_options>();
        o.trace_detail = static_cast<int32_t>(options.trace);
        if (options.cancel) o.cancel = options.cancel->native();
        if (options.on_overflow) {
            o.on_overflow = &on_overflow;
            o.overflow_user_data = &context;
        }
        call(&o);
        if (context.error) std::rethrow_exception(context.error);
    }

    explicit Pipeline(ctxpack_pipeline *owned) noexcept : Shared(owned) {}

    struct OverflowContext {
        const OverflowFn *fn;
        std::exception_ptr error;
    };
    // The overflow callback has no failure channel: keep the exception for `run`.
    static void on_overflow(void *ud, int64_t tokens_over_budget, const std::size_t *items,
                            std::size_t count) noexcept {
        auto *context = static_cast<OverflowContext *>(ud);
        try {
            (*context->fn)(tokens_over_budget, Span<const std::size_t>(items, count));
        } catch (...) {
            context->error = std::current_exception();
        }
    }
};

// ------------------------------------------------------------------ sensitivity

// Whether a variant of a sensitivity comparison includes an item.
enum class ItemStatus : int32_t {
    Included = CTXPACK_ITEM_STATUS_INCLUDED,
    Excluded = CTXPACK_ITEM_STATUS_EXCLUDED,
};

// One labelled pipeline of a sensitivity comparison. It holds its own reference to the
// pipeline (a copy of a `Pipeline` is one more reference to the same object), so a
// variant made from a temporary pipeline is safe.
struct SensitivityVariant {
    std::string label;  // any text; labels need not be unique
    Pipeline pipeline;
};

// An item whose inclusion differs between the variants.
struct Swing {
    std::size_t index = 0;              // its position in the item list
    std::vector<ItemStatus> statuses;   // one per variant, in variant order
};

// The outcome of comparing pipelines over the same items and budget (spec 07 §6): each
// variant's dry run, and the items that at least one variant includes and another
// excludes, matched by their position in the list. Immutable and move-only; the results
// it hands out are new objects that may outlive it.
class Sensitivity : public detail::Owned<ctxpack_sensitivity, ctxpack_sensitivity_free> {
public:
    explicit Sensitivity(ctxpack_sensitivity *owned) noexcept : Owned(owned) {}

    // Dry-runs every variant (two or more; fewer is Status::InvalidArgument) over `items`
    // within `budget`, in order; the first failing run's error is thrown as it is.
    static Sensitivity compare(const Items &items, const Budget &budget,
                               const std::vector<SensitivityVariant> &variants) {
        std::vector<ctxpack_sensitivity_variant> v;
        v.reserve(variants.size());
        for (const SensitivityVariant &variant : variants) {
            v.push_back({detail::str(variant.label), variant.pipeline.native()});
        }
        return Sensitivity(detail::create<ctxpack_sensitivity>([&](ctxpack_sensitivity **out, ctxpack_error **e) {
            return ctxpack_sensitivity_new(items.native(), budget.native(), v.data(), v.size(), out, e);
        }));
    }

    // The number of variants.
    std::size_t variant_count() const {
        return detail::get<std::size_t>(ctxpack_sensitivity_variant_count, native(),
                                        "ctxpack_sensitivity_variant_count");
    }
    // The label of variant `i`, owned by this object (so not on a temporary).
    std::string_view label(std::size_t i) const & {
        ctxpack_str s{};
        detail::check(ctxpack_sensitivity_variant_label(native(), i, &s), "ctxpack_sensitivity_variant_label");
        return detail::view(s);
    }
    std::string_view label(std::size_t i) const && = delete;
    // The dry run of variant `i` (it always has a report), as a new Result.
    Result result(std::size_t i) const {
        return Result(detail::create<ctxpack_result>([&](ctxpack_result **out, ctxpack_error **e) {
            return ctxpack_sensitivity_variant_result(native(), i, out, e);
        }));
    }
    // The number of swinging items.
    std::size_t swing_count() const {
        return detail::get<std::size_t>(ctxpack_sensitivity_diff_count, native(), "ctxpack_sensitivity_diff_count");
    }
    // Swing `i`; swings are in list order.
    Swing swing(std::size_t i) const {
        Swing out;
        const int32_t *statuses = nullptr;
        std::size_t count = 0;
        detail::check(ctxpack_sensitivity_diff(native(), i, &out.index, &statuses, &count), "ctxpack_sensitivity_diff");
        out.statuses.reserve(count);
        for (std::size_t k = 0; k < count; k++) out.statuses.push_back(static_cast<ItemStatus>(statuses[k]));
        return out;
    }
    std::vector<Swing> swings() const {
        std::vector<Swing> out;
        for (std::size_t i = 0, n = swing_count(); i < n; i++) out.push_back(swing(i));
        return out;
    }
};

// ------------------------------------------------------------------ token counting

// A prefix of a text cut on a token and character boundary (`Encoding::truncate`).
struct Truncated {
    std::string_view text;  // a prefix of the text passed in (points into it)
    int64_t tokens = 0;     // its token count
};

// One of the built-in tokenizer encodings ("o200k_base", "cl100k_base";
// docs/tokenizer.md). A cheap value: the encoding itself is owned by the library for the
// life of the process and may be used from any number of threads at once.
class Encoding {
public:
    // The encoding of that name, in any ASCII case. The first call for an encoding loads
    // it (milliseconds). Throws Status::InvalidArgument for an unknown name, and
    // Status::Unsupported when the library was built without the tokenizer feature.
    static Encoding get(std::string_view name) {
        const ctxpack_encoding *e = nullptr;
        detail::call([&](ctxpack_error **err) { return ctxpack_encoding_get(detail::str(name), &e, err); });
        return Encoding(e);
    }

    // The canonical name ("o200k_base"), a static string.
    std::string_view name() const {
        ctxpack_str s{};
        detail::check(ctxpack_encoding_name(e_, &s), "ctxpack_encoding_name");
        return detail::view(s);
    }
    // The number of tokens of `text` (UTF-8; Status::InvalidUtf8 otherwise). Special
    // tokens such as "<|endoftext|>" count as ordinary text.
    int64_t count(std::string_view text) const {
        int64_t n = 0;
        detail::call([&](ctxpack_error **err) { return ctxpack_encoding_count(e_, detail::str(text), &n, err); });
        return n;
    }
    // The count when `text` has at most `limit` (>= 0) tokens, std::nullopt otherwise;
    // counting stops once past the limit, so rejecting a huge text is cheap.
    std::optional<int64_t> count_with_limit(std::string_view text, int64_t limit) const {
        int64_t n = 0;
        detail::call([&](ctxpack_error **err) {
            return ctxpack_encoding_count_with_limit(e_, detail::str(text), limit, &n, err);
        });
        if (n > limit) return std::nullopt;
        return n;
    }
    // The longest prefix of `text` made of at most `max_tokens` (>= 0) of its tokens that
    // ends on a character boundary (nothing is copied: it points into `text`).
    Truncated truncate(std::string_view text, int64_t max_tokens) const {
        std::size_t len = 0;
        int64_t tokens = 0;
        detail::call([&](ctxpack_error **err) {
            return ctxpack_encoding_truncate(e_, detail::str(text), max_tokens, &len, &tokens, err);
        });
        return Truncated{text.substr(0, len), tokens};
    }
    const ctxpack_encoding *native() const noexcept { return e_; }

private:
    explicit Encoding(const ctxpack_encoding *e) noexcept : e_(e) {}
    const ctxpack_encoding *e_;
};

// ------------------------------------------------------------------ chat requests

// The format of a chat request (docs/chat.md).
enum class ChatFormat : int32_t {
    OpenAI = CTXPACK_CHAT_FORMAT_OPENAI,        // OpenAI Chat Completions
    Anthropic = CTXPACK_CHAT_FORMAT_ANTHROPIC,  // Anthropic Messages
};

// Tokens a request costs besides its texts; each >= 0.
struct ChatOverheads {
    int64_t per_message = 0;  // framing of every message
    int64_t per_name = 0;     // a message with a "name" (OpenAI)
    int64_t per_request = 0;  // the reply priming
    int64_t media = 0;        // one image, audio clip or binary document
};

// Long tool outputs sent as their head and tail instead of only being dropped
// (`ChatOptions::shorten`; docs/chat.md, "Shortening tool outputs"). Every text of a tool
// result longer than `head_tokens + tail_tokens` tokens gives its message a cheaper form:
// those texts cut to their first `head_tokens` and last `tail_tokens` tokens with `marker`
// between. When the pipeline places that form, the message is sent with only those strings
// replaced (`ChatResult::shortened()` lists it).
struct ChatShortening {
    // Tokens kept from the start of a long text; with `tail_tokens`, both 0: no shortening.
    uint64_t head_tokens = 0;
    // Tokens kept from its end.
    uint64_t tail_tokens = 0;
    // The quality of a shortened form, in (0, 1]; 0: the share of the message's tokens the
    // form keeps. Anything else (negative, NaN, above 1) is Status::InvalidArgument.
    double quality = 0;
    // Put between head and tail, "{omitted}" replaced by the number of tokens left out;
    // empty: "\n[… {omitted} tokens omitted …]\n". Borrowed for the call.
    std::string_view marker;
};

// How a chat request is trimmed besides the budget and the pipeline.
struct ChatOptions {
    // The encoding that counts the texts, by name; empty: o200k_base (or the built-in
    // estimate in a library built without the tokenizer feature).
    std::string_view encoding;
    // Not None: the selection's report is available (`ChatResult::selection()`).
    TraceDetail trace = TraceDetail::None;
    // Keep the last turn (and the user message it answers) whatever the budget.
    bool pin_last_turn = true;
    // Instead of the provider's overheads.
    std::optional<ChatOverheads> overheads;
    // Not null: keep the start of the trimmed request stable across turns
    // (docs/prefix-cache.md); `ChatResult::reuse` and `ChatResult::prefix_state` then
    // answer. Borrowed for the call.
    const PrefixOptions *prefix = nullptr;
    // The previous turn's `ChatResult::prefix_state()` (null on a first turn); needs
    // `prefix`. Borrowed for the call.
    const PrefixState *previous_state = nullptr;
    // When set, cancelling this token stops the trim (`Error` with `Status::Cancelled`).
    // Borrowed for the call.
    const CancelToken *cancel = nullptr;
    // Set: long tool outputs may be sent as their head and tail (`ChatShortening`). Not
    // available with `prefix` yet (Status::InvalidArgument).
    std::optional<ChatShortening> shorten;
};

// A unit dropped after the run to satisfy a provider rule.
struct ChatAdjustment {
    std::string_view reason;               // owned by the ChatResult
    std::vector<std::string_view> paths;   // the dropped messages ("messages[0]")
};

// A user message ctxpack pinned, beyond the system messages and the last turn, for the
// run whose selection the result holds (docs/chat.md).
struct ChatRulePin {
    std::string_view path;    // the pinned message ("messages[0]"); owned by the ChatResult
    std::string_view reason;  // why it was pinned; owned by the ChatResult
};

// A trimmed chat request and how it was obtained. Strings and arrays it returns are owned
// by it.
class ChatResult : public detail::Owned<ctxpack_chat_result, ctxpack_chat_result_free> {
public:
    explicit ChatResult(ctxpack_chat_result *owned) noexcept : Owned(owned) {}

    // The trimmed request body (the request itself when everything fits).
    std::string_view json() const & {
        ctxpack_str s{};
        detail::check(ctxpack_chat_result_json(native(), &s), "ctxpack_chat_result_json");
        return detail::view(s);
    }
    std::string_view json() const && = delete;
    // Tokens of the trimmed request and of the whole request, as counted.
    int64_t tokens() const { return number(ctxpack_chat_result_tokens, "ctxpack_chat_result_tokens"); }
    int64_t input_tokens() const {
        return number(ctxpack_chat_result_input_tokens, "ctxpack_chat_result_input_tokens");
    }
    // Positions in the request's "messages" array, ascending.
    Span<const std::size_t> kept() const & { return array(ctxpack_chat_result_kept, "ctxpack_chat_result_kept"); }
    Span<const std::size_t> kept() const && = delete;
    Span<const std::size_t> dropped() const & {
        return array(ctxpack_chat_result_dropped, "ctxpack_chat_result_dropped");
    }
    Span<const std::size_t> dropped() const && = delete;
    // The kept messages sent as their head and tail (`ChatOptions::shorten`): positions in
    // the request's "messages" array, ascending, each also in `kept()`; empty without the
    // option.
    Span<const std::size_t> shortened() const & {
        return array(ctxpack_chat_result_shortened, "ctxpack_chat_result_shortened");
    }
    Span<const std::size_t> shortened() const && = delete;
    // The items the pipeline ran on: the selection's and the report's indices are
    // positions in this list; each stands for a JSON path ("messages[3]", "system", "$").
    std::size_t item_count() const {
        return detail::get<std::size_t>(ctxpack_chat_result_item_count, native(), "ctxpack_chat_result_item_count");
    }
    std::string_view item_path(std::size_t i) const & {
        ctxpack_str s{};
        detail::check(ctxpack_chat_result_item_path(native(), i, &s), "ctxpack_chat_result_item_path");
        return detail::view(s);
    }
    std::string_view item_path(std::size_t i) const && = delete;
    // The units the pipeline selected that were dropped after the run to satisfy a
    // provider rule it does not know (Anthropic's first message and thinking blocks;
    // docs/chat.md). Usually empty.
    std::vector<ChatAdjustment> adjustments() const & {
        std::size_t n = 0;
        detail::check(ctxpack_chat_result_adjustment_count(native(), &n), "ctxpack_chat_result_adjustment_count");
        std::vector<ChatAdjustment> out(n);
        for (std::size_t i = 0; i < n; i++) {
            ctxpack_str reason{};
            std::size_t paths = 0;
            detail::check(ctxpack_chat_result_adjustment(native(), i, &reason, &paths),
                          "ctxpack_chat_result_adjustment");
            out[i].reason = detail::view(reason);
            for (std::size_t j = 0; j < paths; j++) {
                ctxpack_str path{};
                detail::check(ctxpack_chat_result_adjustment_path(native(), i, j, &path),
                              "ctxpack_chat_result_adjustment_path");
                out[i].paths.push_back(detail::view(path));
            }
        }
        return out;
    }
    std::vector<ChatAdjustment> adjustments() const && = delete;
    // The user messages ctxpack pinned, beyond the system messages and the last turn, for
    // the run whose selection this result holds. When the first run's selection breaks an
    // Anthropic ordering rule (it starts with an assistant message, or a thinking turn
    // would merge into an earlier assistant message), ctxpack also runs the pipeline with a
    // user message that repairs it pinned, and keeps that run when it keeps more of the
    // first run's selection (in tokens) than dropping units (docs/chat.md, "Repairing a
    // selection"). Empty or one pin; always empty for OpenAI requests.
    std::vector<ChatRulePin> rule_pins() const & {
        std::size_t n = 0;
        detail::check(ctxpack_chat_result_rule_pin_count(native(), &n), "ctxpack_chat_result_rule_pin_count");
        std::vector<ChatRulePin> out(n);
        for (std::size_t i = 0; i < n; i++) {
            ctxpack_str path{}, reason{};
            detail::check(ctxpack_chat_result_rule_pin(native(), i, &path, &reason), "ctxpack_chat_result_rule_pin");
            out[i].path = detail::view(path);
            out[i].reason = detail::view(reason);
        }
        return out;
    }
    std::vector<ChatRulePin> rule_pins() const && = delete;
    // The pipeline's selection, with its report when `ChatOptions::trace` asked for one;
    // a new Result that may outlive this object.
    Result selection() const {
        return Result(detail::create<ctxpack_result>([&](ctxpack_result **out, ctxpack_error **e) {
            return ctxpack_chat_result_selection(native(), out, e);
        }));
    }
    // With `ChatOptions::prefix`: how much of the previous turn's trimmed request this one
    // starts with; unset for a trim without it.
    std::optional<Reuse> reuse() const {
        if (!has_prefix()) return std::nullopt;
        return detail::read_reuse(
            [&](ctxpack_prefix_reuse *r, ctxpack_error **e) { return ctxpack_chat_result_prefix_reuse(native(), r, e); },
            [&](ctxpack_string **out, ctxpack_error **e) {
                return ctxpack_chat_result_prefix_reuse_json(native(), out, e);
            });
    }
    // With `ChatOptions::prefix`: this turn's state, for the next turn's
    // `ChatOptions::previous_state` (a new object that may outlive this one); unset for a
    // trim without it.
    std::optional<PrefixState> prefix_state() const {
        if (!has_prefix()) return std::nullopt;
        return PrefixState(detail::create<ctxpack_prefix_state>([&](ctxpack_prefix_state **out, ctxpack_error **e) {
            return ctxpack_chat_result_prefix_state(native(), out, e);
        }));
    }

private:
    bool has_prefix() const {
        auto r = detail::sized<ctxpack_prefix_reuse>();
        ctxpack_status status = ctxpack_chat_result_prefix_reuse(native(), &r, nullptr);
        if (status == CTXPACK_NO_REPORT) return false;
        detail::check(status, "ctxpack_chat_result_prefix_reuse");
        return true;
    }
    template <typename F>
    int64_t number(F f, const char *what) const {
        int64_t n = 0;
        detail::check(f(native(), &n), what);
        return n;
    }
    template <typename F>
    Span<const std::size_t> array(F f, const char *what) const {
        const std::size_t *ptr = nullptr;
        std::size_t len = 0;
        detail::check(f(native(), &ptr, &len), what);
        return Span<const std::size_t>(ptr, len);
    }
};

// Trims a chat request body to `budget` with `pipeline` (any pipeline: a preset, a
// policy, or one built by hand); a tool call is kept or dropped with its results. A bad
// request throws Status::InvalidRequest with the JSON path in the message; the pipeline's
// own failures keep their statuses (Status::PinnedExceedsBudget, ...).
inline ChatResult trim_chat(ChatFormat format, std::string_view request, const Budget &budget,
                            const Pipeline &pipeline, const ChatOptions &options = {}) {
    auto o = detail::sized<ctxpack_chat_options>();
    o.encoding = detail::str(options.encoding);
    o.trace_detail = static_cast<int32_t>(options.trace);
    o.unpin_last_turn = options.pin_last_turn ? 0 : 1;
    if (options.overheads) {
        o.has_overheads = 1;
        o.overhead_per_message = options.overheads->per_message;
        o.overhead_per_name = options.overheads->per_name;
        o.overhead_per_request = options.overheads->per_request;
        o.overhead_media = options.overheads->media;
    }
    ctxpack_prefix_options prefix{};
    if (options.prefix) {
        prefix = detail::prefix_options(*options.prefix);
        o.prefix = &prefix;
    }
    o.previous_state = options.previous_state ? options.previous_state->native() : nullptr;
    o.cancel = options.cancel ? options.cancel->native() : nullptr;
    if (options.shorten) {
        o.shorten_head_tokens = options.shorten->head_tokens;
        o.shorten_tail_tokens = options.shorten->tail_tokens;
        o.shorten_quality = options.shorten->quality;
        o.shorten_marker = detail::str(options.shorten->marker);
    }
    return ChatResult(detail::create<ctxpack_chat_result>([&](ctxpack_chat_result **out, ctxpack_error **e) {
        return ctxpack_chat_trim(static_cast<int32_t>(format), detail::str(request), budget.native(),
                                 pipeline.native(), &o, out, e);
    }));
}

// `trim_chat` for an OpenAI Chat Completions request.
inline ChatResult trim_openai(std::string_view request, const Budget &budget, const Pipeline &pipeline,
                              const ChatOptions &options = {}) {
    return trim_chat(ChatFormat::OpenAI, request, budget, pipeline, options);
}

// `trim_chat` for an Anthropic Messages request.
inline ChatResult trim_anthropic(std::string_view request, const Budget &budget, const Pipeline &pipeline,
                                 const ChatOptions &options = {}) {
    return trim_chat(ChatFormat::Anthropic, request, budget, pipeline, options);
}

// ------------------------------------------------------------------ policy and budget JSON

// What a lenient read of policy or budget JSON did instead of failing.
enum class JsonWarningKind : int32_t {
    // A property this version does not know (or a wrongly-cased name) was ignored.
    UnknownProperty = CTXPACK_JSON_WARNING_KIND_UNKNOWN_PROPERTY,
    // A scorer entry without "type" was read as "recency", as .NET reads it.
    MissingScorerType = CTXPACK_JSON_WARNING_KIND_MISSING_SCORER_TYPE,
    // A "kindWeights" or "reservedSlots" key repeated an earlier kind with other letter
    // case; the last value was kept under the first spelling.
    RepeatedKind = CTXPACK_JSON_WARNING_KIND_REPEATED_KIND,
    // A budget without "maxTokens" or "targetTokens" had it read as 0.
    MissingBudgetField = CTXPACK_JSON_WARNING_KIND_MISSING_BUDGET_FIELD,
};

// One warning of a lenient read.
struct JsonWarning {
    JsonWarningKind kind;
    std::string path;     // the JSON path concerned ("scorers[0].wieght"; "$" for the document)
    std::string message;  // what the reader did ("unknown property; ignored")
    std::string text;     // path, ": " and message: the line to show a user
};

// Host scorers registered under type names, so that a policy entry
// {"type": "<name>", "weight": w} runs them. Names compare ASCII case-insensitively;
// adding a name again replaces the earlier scorer. Thread-safe, `add` included.
class ScorerRegistry : public detail::Owned<ctxpack_scorer_registry, ctxpack_scorer_registry_free> {
public:
    ScorerRegistry()
        : Owned(detail::create<ctxpack_scorer_registry>(
              [](ctxpack_scorer_registry **out, ctxpack_error **e) { return ctxpack_scorer_registry_new(out, e); })) {}

    // Registers `scorer` (a custom one, e.g. `Scorer::custom_batch(lambda)`, or a built-in
    // one) under `name`. The registry keeps its own reference; the lambda's state is
    // destroyed when the registry and every pipeline built from a policy naming it are
    // gone. A blank name or a built-in type's name is Status::InvalidArgument.
    void add(std::string_view name, const Scorer &scorer) {
        detail::call([&](ctxpack_error **e) {
            return ctxpack_scorer_registry_add(native(), detail::str(name), scorer.native(), e);
        });
    }

    // The number of registered names.
    std::size_t size() const {
        std::size_t n = 0;
        detail::check(ctxpack_scorer_registry_count(native(), &n), "ctxpack_scorer_registry_count");
        return n;
    }

    // The registered names, in registration order.
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (std::size_t i = 0, n = size(); i < n; i++) {
            ctxpack_str name{};
            detail::check(ctxpack_scorer_registry_name(native(), i, &name), "ctxpack_scorer_registry_name");
            out.emplace_back(detail::view(name));
        }
        return out;
    }
};

// How Pipeline::from_policy_json and Budget::from_json read their document. The
// defaults read leniently, with the built-in scorer types only.
struct JsonReadOptions {
    // Each case a lenient read reports as a warning is an error instead
    // (Status::InvalidPolicy, or Status::InvalidBudget for a budget).
    bool strict = false;
    // The host scorer types a policy may name (borrowed for the call; null: none).
    const ScorerRegistry *registry = nullptr;
};

namespace detail {

inline ctxpack_json_read_options read_options(const JsonReadOptions &options) noexcept {
    auto o = sized<ctxpack_json_read_options>();
    o.strict = options.strict;
    o.registry = options.registry != nullptr ? options.registry->native() : nullptr;
    return o;
}

// Copies the warnings of a handle (freeing it) into `*out` when `out` is not null.
inline void take_warnings(ctxpack_json_warnings *raw, std::vector<JsonWarning> *out) {
    std::unique_ptr<ctxpack_json_warnings, void (*)(ctxpack_json_warnings *)> owned(raw, ctxpack_json_warnings_free);
    if (out == nullptr) return;
    out->clear();
    std::size_t n = 0;
    check(ctxpack_json_warnings_count(raw, &n), "ctxpack_json_warnings_count");
    for (std::size_t i = 0; i < n; i++) {
        auto w = sized<ctxpack_json_warning>();
        call([&](ctxpack_error **e) { return ctxpack_json_warnings_entry(raw, i, &w, e); });
        out->push_back({static_cast<JsonWarningKind>(w.kind), std::string(view(w.path)),
                        std::string(view(w.message)), std::string(view(w.text))});
    }
}

}  // namespace detail

inline Pipeline Pipeline::from_policy_json(std::string_view json, const JsonReadOptions &options,
                                           std::vector<JsonWarning> *warnings) {
    ctxpack_json_read_options o = detail::read_options(options);
    ctxpack_json_warnings *raw = nullptr;
    Pipeline pipeline(detail::create<ctxpack_pipeline>([&](ctxpack_pipeline **out, ctxpack_error **e) {
        return ctxpack_pipeline_new_policy_json_with(detail::str(json), &o, out, &raw, e);
    }));
    detail::take_warnings(raw, warnings);
    return pipeline;
}

inline Budget Budget::from_json(std::string_view json) { return from_json(json, JsonReadOptions{}); }

inline Budget Budget::from_json(std::string_view json, const JsonReadOptions &options,
                                std::vector<JsonWarning> *warnings) {
    ctxpack_json_read_options o = detail::read_options(JsonReadOptions{options.strict, nullptr});
    ctxpack_json_warnings *raw = nullptr;
    Budget budget(detail::create<ctxpack_budget>([&](ctxpack_budget **out, ctxpack_error **e) {
        return ctxpack_budget_new_json(detail::str(json), &o, out, &raw, e);
    }));
    detail::take_warnings(raw, warnings);
    return budget;
}

inline std::string Budget::json(bool pretty) const {
    return detail::take_string(detail::create<ctxpack_string>([&](ctxpack_string **out, ctxpack_error **e) {
        return ctxpack_budget_json(native(), pretty, out, e);
    }));
}

// The names of the presets, in the order of spec 07 §2.
inline std::vector<std::string_view> presets() {
    std::vector<std::string_view> names;
    for (std::size_t i = 0; i < ctxpack_preset_count(); i++) {
        ctxpack_str name{};
        detail::check(ctxpack_preset_name(i, &name), "ctxpack_preset_name");
        names.push_back(detail::view(name));  // static strings
    }
    return names;
}

}  // namespace ctxpack

#endif  // CTXPACK_HPP
