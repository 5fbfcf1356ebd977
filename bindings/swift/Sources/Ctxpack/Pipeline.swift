import CCtxpack
import Foundation

public enum OverflowStrategy: Int32, Sendable {
    case `throw` = 0
    case truncate = 1
    case proceed = 2
}

public enum TraceDetail: Int32, Sendable {
    case none = 0
    case stage = 1
    case item = 2
}

public enum InclusionReason: Int32, Sendable {
    /// A value this version does not know (not in the C enumeration).
    case unknown = 0
    case scored = 1
    case pinned = 2
    case zeroToken = 3
    /// Placed as one of its cheaper variants (docs/variants.md); see `IncludedEntry`.
    case downgraded = 4
}

/// Why an item is in the window as a cheaper variant (`IncludedEntry.cause`).
public enum DowngradeCause: Int32, Sendable {
    case none = 0
    case budgetExceeded = 1
    case slicerChoice = 2
    case truncated = 3
}

/// A variant no selection could need: another form of the item has no more tokens and at
/// least its quality.
public struct PrunedForm: Sendable, Equatable {
    public let index: Int  // the item's position
    public let form: Int  // the pruned form (>= 1)
    public let dominatedBy: Int
}

public enum ExclusionReason: Int32, Sendable {
    case unknown = 0
    case budgetExceeded = 1
    case scoredTooLow = 2
    case deduplicated = 3
    case quotaCapExceeded = 4
    case quotaRequireDisplaced = 5
    case negativeTokens = 6
    case pinnedOverride = 7
    case filtered = 8
    case countCapExceeded = 9
    case countRequireCandidatesExhausted = 10
    /// The item's group was left out because another member was (docs/groups.md); see
    /// `ExcludedEntry.group` and the `member` fields.
    case groupExcluded = 11
}

/// How a group's value is computed from its members' scores (docs/groups.md).
public enum GroupValue: Int32, Sendable {
    case sum = 0
    case max = 1
    case mean = 2
}

/// Whether a group of a report is in the window.
public enum GroupDecision: Int32, Sendable {
    case included = 1
    case excluded = 2
}

/// One group of a traced run's input (docs/groups.md), in order of its first member.
public struct GroupEntry: Sendable, Equatable {
    public let key: String
    /// The members' positions in the caller's list, in list order.
    public let members: [Int]
    /// The members' tokens added.
    public let tokens: Int64
    /// The group's value; nil for a pinned group and one excluded at Classify.
    public let value: Double?
    /// nil: a value this version does not know.
    public let decision: GroupDecision?
    /// When excluded: the stage that excluded the group.
    public let stage: PipelineStage?
    /// When excluded: the member whose exclusion took the group out.
    public let memberIndex: Int?
    /// The first pinned member, when it pinned the whole group.
    public let pinnedBy: Int?
    /// A slicer returned only some of the members.
    public let partialSelection: Bool
}

public struct ReportSummary: Sendable, Equatable {
    public let totalCandidates: Int
    /// The sum of every input item's tokens; the nearest Int64 when the exact sum does not
    /// fit (then `totalTokensSaturated`; the report's JSON has the exact number).
    public let totalTokensConsidered: Int64
    public let totalTokensSaturated: Bool
}

public struct IncludedEntry: Sendable, Equatable {
    public let index: Int  // position in the caller's item list
    public let score: Double
    public let reason: InclusionReason
    /// The form placed: 0 in full, f >= 1 the item's `variants[f - 1]`.
    public let form: Int
    /// Downgraded: the item's own tokens, the placed form's, the tokens left unused when
    /// the form was chosen, and why (`.none` for other reasons).
    public let fullTokens: Int64
    public let chosenTokens: Int64
    public let availableTokens: Int64
    public let cause: DowngradeCause?
}

/// An excluded item with its reason and every field of the reason (fields of other
/// reasons are zero or empty).
public struct ExcludedEntry: Sendable, Equatable {
    public let index: Int
    public let score: Double
    public let reason: ExclusionReason
    public let name: String  // the wire name, "BudgetExceeded", ...
    public let itemTokens: Int64
    public let availableTokens: Int64
    public let reasonScore: Double
    public let threshold: Double
    public let deduplicatedAgainst: String
    public let kind: String
    public let cap: Int64
    public let actual: Int64
    public let displacedByKind: String
    public let tokens: Int64
    public let displacedBy: String
    public let filterName: String
    public let countCap: UInt64
    public let count: UInt64
    /// GroupExcluded: the group key.
    public let group: String
    /// GroupExcluded: the member whose exclusion took the group out.
    public let memberIndex: Int
    /// GroupExcluded: that member's content.
    public let memberContent: String
    /// GroupExcluded: that member's reason (wire name).
    public let memberReason: String
}

public enum PipelineStage: Int32, Sendable {
    case classify = 0
    case score = 1
    case deduplicate = 2
    case slice = 3
    case place = 4
}

public struct TraceEvent: Sendable, Equatable {
    public let stage: PipelineStage?  // nil: a stage this version does not know
    /// How long the stage took, in milliseconds (as the report's JSON has it).
    public let durationMs: Double
    /// How long the stage took.
    @available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
    public var duration: Duration { .nanoseconds(Int64((durationMs * 1e6).rounded())) }
    public let itemCount: Int
    public let message: String?
    public let itemIndex: Int?
}

public struct Shortfall: Sendable, Equatable {
    public let kind: String
    public let requiredCount: UInt64
    public let satisfiedCount: UInt64
}

/// The selection report of a traced run. It keeps the library's result of the run and
/// reads each part from it on first access, then keeps that copy: a traced run costs what
/// the parts it reads cost, and a part read once is not read again. The result is freed
/// when the last copy of the `RunResult` (and of this report) goes; it needs none of the
/// pipeline, items or budget objects of the run. Safe to share between tasks and threads:
/// concurrent first accesses read a part once (the others wait for it).
///
/// The reads cannot fail on a result the report owns (a live handle, positions below the
/// summary's counts); a failure would be a bug in the library, and stops the program with
/// the library's message rather than returning a partial report.
public final class Report: @unchecked Sendable {
    // @unchecked: the handle is only read (the library allows any number of readers of a
    // result), the cache fields are only touched with `lock` held, `summary` and `counts`
    // are immutable.
    let result: ResultHandle  // internal for the tests
    private let counts: ctxpack_report_summary
    private let lock = NSLock()
    private var cachedIncluded: [IncludedEntry]?
    private var cachedExcluded: [ExcludedEntry]?
    private var cachedEvents: [TraceEvent]?
    private var cachedShortfalls: [Shortfall]?
    private var cachedGroups: [GroupEntry]?
    private var cachedPrunedForms: [PrunedForm]?
    private var cachedAnalytics: Analytics?
    private var cachedJSON: String?

    /// The run's totals (read with the result; one call into the library).
    public let summary: ReportSummary

    /// The report of a traced result, which it keeps.
    init(_ result: ResultHandle) throws {
        self.result = result
        counts = try result.with { r in
            try entry("ctxpack_result_report_summary") { ctxpack_result_report_summary(r, $0, $1) }
        }
        summary = ReportSummary(
            totalCandidates: counts.total_candidates, totalTokensConsidered: counts.total_tokens_considered,
            totalTokensSaturated: counts.total_tokens_saturated)
    }

    /// The included items, in placed order.
    public var included: [IncludedEntry] {
        cached(\.cachedIncluded) { try readIncluded($0, count: counts.included_count) }
    }
    /// The excluded items with their reasons.
    public var excluded: [ExcludedEntry] {
        cached(\.cachedExcluded) { try readExcluded($0, count: counts.excluded_count) }
    }
    /// The trace events (per stage; per item too at `.item` detail).
    public var events: [TraceEvent] { cached(\.cachedEvents) { try readEvents($0, count: counts.event_count) } }
    /// The count requirements a count-quota slicer could not meet.
    public var shortfalls: [Shortfall] {
        cached(\.cachedShortfalls) { try readShortfalls($0, count: counts.shortfall_count) }
    }
    /// The item groups of the input (none when no item has a group).
    public var groups: [GroupEntry] { cached(\.cachedGroups) { try readGroups($0, count: counts.group_count) } }
    /// The variants no selection could need, input order then form order.
    public var prunedForms: [PrunedForm] {
        cached(\.cachedPrunedForms) { try readPrunedForms($0, count: counts.pruned_form_count) }
    }
    /// The report helpers (budget utilization, kind diversity, timestamp coverage, quota
    /// utilization).
    public var analytics: Analytics { cached(\.cachedAnalytics, readAnalytics) }
    /// The spec 06 §10 wire form (the library builds it on the first request).
    public var json: String {
        cached(\.cachedJSON) { r in
            var json = ctxpack_str(ptr: nil, len: 0)
            try check(ctxpack_result_report_json(r, &json), nil, "ctxpack_result_report_json")
            return string(json)
        }
    }

    /// The part in `slot`, read with `read` on the first access. `read` must not use
    /// another part (the lock is not recursive); the counts are at hand in `counts`.
    private func cached<T>(_ slot: ReferenceWritableKeyPath<Report, T?>, _ read: (OpaquePointer) throws -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        if let value = self[keyPath: slot] { return value }
        let value: T
        do {
            value = try result.with(read)
        } catch {
            fatalError("ctxpack: reading the report of a live result failed: \(error)")
        }
        self[keyPath: slot] = value
        return value
    }
}

/// The overflow event of a Proceed run over target.
public struct Overflow: Sendable, Equatable {
    /// The tokens of the placed items beyond the budget's target.
    public let tokensOverBudget: Int64
    /// The items placed, as positions in the caller's list.
    public let items: [Int]
}

/// The outcome of a run: the selection is copied out of the library's result at once; a
/// traced run's `report` keeps the result and reads its parts when asked (an untraced run's
/// result is freed at once).
public struct RunResult: Sendable {
    /// The selected items as positions in the caller's list, in placed order.
    public let indices: [Int]
    /// Their scores (1.0 for pinned items), parallel to `indices`.
    public let scores: [Double]
    public let reasons: [InclusionReason]
    /// The form of each placed item, parallel to `indices`: 0 in full, f >= 1 its
    /// `variants[f - 1]` (whose content and tokens go into the window).
    public let forms: [Int]
    /// The overflow event of a Proceed run over target.
    public let overflow: Overflow?
    /// Present when the run was traced; shared by the copies of this value.
    public let report: Report?
}

/// Scorer + slicer + placer + options; immutable, and safe to run from many threads (see
/// Components.swift on `@unchecked Sendable`).
public final class Pipeline: @unchecked Sendable {
    let handle: OpaquePointer

    /// The pipeline keeps its own reference to each component. `groupValue` matters only
    /// when items have groups; `pinnedFirst` places the pinned items first, in input
    /// order, before everything the placer orders.
    public init(
        scorer: Scorer, slicer: Slicer, placer: Placer, deduplication: Bool = true,
        overflowStrategy: OverflowStrategy = .throw, groupValue: GroupValue = .sum, pinnedFirst: Bool = false,
        useVariants: Bool = true
    ) throws {
        var options = ctxpack_pipeline_options.sized()
        options.deduplication = flag(deduplication)
        options.no_variants = flag(!useVariants)
        options.overflow_strategy = overflowStrategy.rawValue
        options.group_value = groupValue.rawValue
        options.pinned_first = flag(pinnedFirst)
        handle = try withExtendedLifetime((scorer, slicer, placer)) {
            try create { ctxpack_pipeline_new(scorer.handle, slicer.handle, placer.handle, &options, $0, $1) }
        }
    }

    /// The pipeline of a preset (spec 07 §2): `"Chat"`, `"code-review"`, ... in any ASCII
    /// case, with or without separators; `Pipeline.presets` lists them.
    public convenience init(preset name: String) throws {
        let arena = CArena()
        let cName = arena.str(name)
        let handle = try withExtendedLifetime(arena) { try create { ctxpack_pipeline_new_preset(cName, $0, $1) } }
        self.init(handle: handle)
    }

    /// A pipeline from a policy in JSON (docs/policy-json.md). Structural problems are
    /// `Status.invalidPolicy`, naming the JSON path of the bad field.
    public convenience init(policyJSON json: String) throws {
        let arena = CArena()
        let cJSON = arena.str(json)
        let handle = try withExtendedLifetime(arena) { try create { ctxpack_pipeline_new_policy_json(cJSON, $0, $1) } }
        self.init(handle: handle)
    }

    /// Takes ownership of a pipeline handle a C constructor created.
    init(handle: OpaquePointer) { self.handle = handle }

    deinit { ctxpack_pipeline_free(handle) }

    /// The names of the presets, in the order of spec 07 §2.
    public static var presets: [String] {
        let names: [String] = (0..<ctxpack_preset_count()).map { i in
            var name = ctxpack_str(ptr: nil, len: 0)
            _ = ctxpack_preset_name(i, &name)  // cannot fail below the count
            return string(name)
        }
        return names
    }

    /// The pipeline's policy as JSON (`Status.invalidPolicy` for custom components).
    public func policyJSON(pretty: Bool = false) throws -> String {
        try takeString(create { ctxpack_pipeline_policy_json(handle, flag(pretty), $0, $1) })
    }

    /// Runs the pipeline. With `cancel`, the run stops with `Status.cancelled` once the
    /// token is cancelled (from any thread): before each stage and inside the long loops
    /// (every knapsack row, every call of a per-item custom scorer). `onOverflow` observes
    /// the overflow event of a Proceed run over target while the run goes on: it is called
    /// on the calling thread, before `run` returns; if it throws, the run still completes
    /// (the library's observer cannot fail) and `run` throws that error instead of
    /// returning.
    public func run(
        _ items: Items, budget: Budget, trace: TraceDetail = .none, cancel: CancelToken? = nil,
        onOverflow: ((Overflow) throws -> Void)? = nil
    ) throws -> RunResult {
        try run(trace: trace, cancel: cancel, onOverflow: onOverflow, holding: (items, budget)) { options, out, error in
            ctxpack_pipeline_run(handle, items.handle, budget.handle, options, out, error)
        }
    }

    /// Runs once over `items` without an `Items` list (the library's one-shot run,
    /// `ctxpack_pipeline_run_descs`): the items are copied once, before the run starts, and
    /// no list is kept. Result indices are positions in `items`; otherwise as `run`.
    public func runOnce(
        _ items: [Item], budget: Budget, trace: TraceDetail = .none, cancel: CancelToken? = nil,
        onOverflow: ((Overflow) throws -> Void)? = nil
    ) throws -> RunResult {
        let arena = CArena()
        let descs = try batchDescriptors(items, in: arena)
        return try run(trace: trace, cancel: cancel, onOverflow: onOverflow, holding: (arena, budget)) {
            options, out, error in
            descs.withUnsafeBufferPointer {
                ctxpack_pipeline_run_descs(handle, $0.baseAddress, $0.count, budget.handle, options, out, error)
            }
        }
    }

    /// Frees the memory the pipeline keeps for its one-shot runs (`runOnce`; the library's
    /// `ctxpack_pipeline_release_memory`). After a one-shot run of at most 131 072 items the
    /// pipeline keeps that run's buffers for the next one, about 170 bytes per item of the
    /// largest kept run for an agent pipeline (numbers only, never the items' contents);
    /// this frees them, and the next one-shot run allocates them again. Results and
    /// `Runner`s are unaffected. Safe from any thread at any time, during runs too: a run in
    /// progress keeps what it holds until it returns.
    public func releaseMemory() throws {
        try check(ctxpack_pipeline_release_memory(handle), nil, "ctxpack_pipeline_release_memory")
    }

    /// A run through `call` with the C form of the options; `holding` (the inputs the call
    /// reads) stays alive until it returns.
    private func run(
        trace: TraceDetail, cancel: CancelToken?, onOverflow: ((Overflow) throws -> Void)?, holding: Any,
        _ call: (
            UnsafePointer<ctxpack_run_options>, UnsafeMutablePointer<OpaquePointer?>,
            UnsafeMutablePointer<OpaquePointer?>
        ) -> Int32
    ) throws -> RunResult {
        var options = ctxpack_run_options.sized()
        options.trace_detail = trace.rawValue
        options.cancel = cancel?.handle
        let observer = onOverflow.map(OverflowObserver.init)
        if let observer = observer {
            options.on_overflow = overflowThunk
            options.overflow_user_data = Unmanaged.passUnretained(observer).toOpaque()
        }
        let result = ResultHandle(
            try withExtendedLifetime((holding, cancel, observer)) {
                try withUnsafePointer(to: &options) { o in try create { call(o, $0, $1) } }
            })
        if let error = observer?.error { throw error }
        return try readResult(result)
    }

    /// Runs the pipeline, cancelled when the current task is: a cancelled task's run throws
    /// `CtxpackError` with `Status.cancelled`. The run itself is synchronous (it keeps its
    /// thread busy until it returns or is cancelled).
    public func runAsync(
        _ items: Items, budget: Budget, trace: TraceDetail = .none, onOverflow: ((Overflow) throws -> Void)? = nil
    ) async throws -> RunResult {
        let token = try CancelToken()
        return try await withTaskCancellationHandler {
            try run(items, budget: budget, trace: trace, cancel: token, onOverflow: onOverflow)
        } onCancel: {
            token.cancel()
        }
    }
}

/// The overflow closure of one run, and the first error it threw.
private final class OverflowObserver {
    let observe: (Overflow) throws -> Void
    var error: Error?
    init(_ observe: @escaping (Overflow) throws -> Void) { self.observe = observe }
}

/// The library's overflow observer: calls the run's closure (synchronously, on the run's
/// thread, so the observer is not shared).
private let overflowThunk: ctxpack_overflow_fn = { userData, tokensOverBudget, items, count in
    let observer = Unmanaged<OverflowObserver>.fromOpaque(userData!).takeUnretainedValue()
    let merged = Array(UnsafeBufferPointer(start: count > 0 ? items : nil, count: count))
    do {
        try observer.observe(Overflow(tokensOverBudget: tokensOverBudget, items: merged))
    } catch {
        if observer.error == nil { observer.error = error }
    }
}

/// A cancellation flag for runs (`ctxpack_cancel_token`): pass it to `Pipeline.run`, then
/// `cancel()` from any thread or task stops the run with `Status.cancelled`. It stays
/// cancelled; one token may serve many runs at once. Thread-safe, hence `Sendable`.
public final class CancelToken: @unchecked Sendable {
    let handle: OpaquePointer

    public init() throws { handle = try create { ctxpack_cancel_token_new($0, $1) } }

    deinit { ctxpack_cancel_token_free(handle) }

    /// Cancels every run using this token, now and later.
    public func cancel() { _ = ctxpack_cancel_token_cancel(handle) }  // cannot fail on a live token

    /// Whether `cancel()` was called.
    public var isCancelled: Bool {
        var out: UInt8 = 0
        _ = ctxpack_cancel_token_is_cancelled(handle, &out)
        return out != 0
    }
}

// MARK: - Reading a result

/// Copies an array a library object owns.
func copyArray<T>(_ function: String, _ get: (UnsafeMutablePointer<UnsafePointer<T>?>, UnsafeMutablePointer<Int>) -> Int32)
    throws -> [T]
{
    var ptr: UnsafePointer<T>? = nil
    var count = 0
    try check(get(&ptr, &count), nil, function)
    return Array(UnsafeBufferPointer(start: count > 0 ? ptr : nil, count: count))
}

/// A `ctxpack_result` the binding owns, freed when the last reference goes (a traced run's
/// `Report` keeps one).
final class ResultHandle: @unchecked Sendable {
    // @unchecked: the library allows any number of concurrent readers of a result, and the
    // binding writes through the handle only in a `Runner`, which holds the only reference
    // to its kept handle (under its lock) and calls `disown` there.
    private let pointer: OpaquePointer
    /// Set when the library released `pointer` itself (a run into it made a new result).
    private var disowned = false

    /// Takes ownership of `pointer`.
    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { if !disowned { ctxpack_result_free(pointer) } }

    /// The pointer, for a run into this result (`Runner`), which keeps the handle alive.
    var raw: OpaquePointer { pointer }

    /// Gives up the pointer without freeing it: the library has released it.
    func disown() { disowned = true }

    /// `body` with the result, which stays alive until `body` returns.
    func with<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(pointer) }
    }
}

/// A struct a report accessor fills; a wrong `struct_size` would come back with a message.
private func entry<T: GrowingCStruct>(
    _ function: String, _ get: (UnsafeMutablePointer<T>, UnsafeMutablePointer<OpaquePointer?>) -> Int32
) throws -> T {
    var value = T.sized()
    try call { get(&value, $0) }
    return value
}

/// Copies a result's selection; a traced result's report keeps the result (`Chat.swift`
/// and `Prefix.swift` read their selections with it too).
func readResult(_ result: ResultHandle) throws -> RunResult {
    try result.with { r in
        let indices: [Int] = try copyArray("ctxpack_result_indices") { ctxpack_result_indices(r, $0, $1) }
        let scores: [Double] = try copyArray("ctxpack_result_scores") { ctxpack_result_scores(r, $0, $1) }
        let reasons: [Int32] = try copyArray("ctxpack_result_reasons") { ctxpack_result_reasons(r, $0, $1) }
        let forms: [Int] = try copyArray("ctxpack_result_forms") { ctxpack_result_forms(r, $0, $1) }

        var present = false
        var over: Int64 = 0
        var merged: UnsafePointer<Int>? = nil
        var mergedCount = 0
        try check(ctxpack_result_overflow(r, &present, &over, &merged, &mergedCount), nil, "ctxpack_result_overflow")
        var overflow: Overflow? = nil
        if present {
            overflow = Overflow(
                tokensOverBudget: over,
                items: Array(UnsafeBufferPointer(start: mergedCount > 0 ? merged : nil, count: mergedCount)))
        }

        var traced = false
        try check(ctxpack_result_has_report(r, &traced), nil, "ctxpack_result_has_report")
        return RunResult(
            indices: indices, scores: scores, reasons: reasons.map { InclusionReason(rawValue: $0) ?? .unknown },
            forms: forms, overflow: overflow, report: traced ? try Report(result) : nil)
    }
}

// The report parts, each read in full from a traced result with `count` entries (the
// summary's count of that part).

private func readIncluded(_ r: OpaquePointer, count: Int) throws -> [IncludedEntry] {
    try (0..<count).map { i in
        let e: ctxpack_included_entry = try entry("ctxpack_result_report_included") {
            ctxpack_result_report_included(r, i, $0, $1)
        }
        return IncludedEntry(
            index: e.index, score: e.score, reason: InclusionReason(rawValue: e.reason) ?? .unknown, form: e.form,
            fullTokens: e.full_tokens, chosenTokens: e.chosen_tokens, availableTokens: e.available_tokens,
            cause: DowngradeCause(rawValue: e.cause))
    }
}

private func readExcluded(_ r: OpaquePointer, count: Int) throws -> [ExcludedEntry] {
    try (0..<count).map { i in
        let e: ctxpack_excluded_entry = try entry("ctxpack_result_report_excluded") {
            ctxpack_result_report_excluded(r, i, $0, $1)
        }
        return ExcludedEntry(
            index: e.index, score: e.score, reason: ExclusionReason(rawValue: e.reason) ?? .unknown,
            name: string(e.name), itemTokens: e.item_tokens, availableTokens: e.available_tokens,
            reasonScore: e.reason_score, threshold: e.threshold, deduplicatedAgainst: string(e.deduplicated_against),
            kind: string(e.kind), cap: e.cap, actual: e.actual, displacedByKind: string(e.displaced_by_kind),
            tokens: e.tokens, displacedBy: string(e.displaced_by), filterName: string(e.filter_name),
            countCap: e.count_cap, count: e.count, group: string(e.group), memberIndex: e.member_index,
            memberContent: string(e.member_content), memberReason: string(e.member_reason))
    }
}

private func readEvents(_ r: OpaquePointer, count: Int) throws -> [TraceEvent] {
    try (0..<count).map { i in
        let e: ctxpack_trace_event = try entry("ctxpack_result_report_event") { ctxpack_result_report_event(r, i, $0, $1) }
        return TraceEvent(
            stage: PipelineStage(rawValue: e.stage), durationMs: e.duration_ms, itemCount: e.item_count,
            message: e.has_message ? string(e.message) : nil, itemIndex: e.has_item_index ? e.item_index : nil)
    }
}

private func readShortfalls(_ r: OpaquePointer, count: Int) throws -> [Shortfall] {
    try (0..<count).map { i in
        let e: ctxpack_shortfall = try entry("ctxpack_result_report_shortfall") {
            ctxpack_result_report_shortfall(r, i, $0, $1)
        }
        return Shortfall(kind: string(e.kind), requiredCount: e.required_count, satisfiedCount: e.satisfied_count)
    }
}

private func readGroups(_ r: OpaquePointer, count: Int) throws -> [GroupEntry] {
    try (0..<count).map { i in
        let g: ctxpack_group_entry = try entry("ctxpack_result_report_group") { ctxpack_result_report_group(r, i, $0, $1) }
        let decision = GroupDecision(rawValue: g.decision)
        let excluded = decision == .excluded
        return GroupEntry(
            key: string(g.key), members: Array(UnsafeBufferPointer(start: g.members, count: g.member_count)),
            tokens: g.tokens, value: g.has_value ? g.value : nil, decision: decision,
            stage: excluded ? PipelineStage(rawValue: g.stage) : nil, memberIndex: excluded ? g.member_index : nil,
            pinnedBy: g.has_pinned_by ? g.pinned_by : nil, partialSelection: g.partial_selection)
    }
}

private func readPrunedForms(_ r: OpaquePointer, count: Int) throws -> [PrunedForm] {
    try (0..<count).map { i in
        let p: ctxpack_pruned_form = try entry("ctxpack_result_report_pruned_form") {
            ctxpack_result_report_pruned_form(r, i, $0, $1)
        }
        return PrunedForm(index: p.index, form: p.form, dominatedBy: p.dominated_by)
    }
}
