import CCtxpack
import Foundation

// Prefix states across turns (docs/prefix-cache.md): the prefix run, its reuse report and
// the state with its two serialised forms.

extension ctxpack_prefix_options: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_prefix_options_init(v, n) }
}
extension ctxpack_prefix_reuse: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_prefix_reuse_init(v, n) }
}

/// What a prefix run does with the previous turn's window.
public enum PrefixMode: Int32, Sendable {
    /// Keep the longest previous prefix that is still present and fits; select the rest after it.
    case hold = 0
    /// Select as usual and report how much of the previous window survives.
    case measure = 1
}

/// How a prefix run's turn went.
public enum TurnOutcome: Int32, Sendable {
    case measured = 0, held = 1, anchored = 2, reanchored = 3
}

/// Why the new window stops matching the previous one.
public enum DifferenceReason: Int32, Sendable {
    case removed = 0, edited = 1, reordered = 2, inserted = 3, budget = 4, groupChanged = 5
}

/// A prefix state: what a turn placed, for the next turn. Immutable; store it with `bytes()`
/// (or `json()`) and read it back with `init(bytes:)` (or `init(json:)`), which throw
/// `Status.invalidState` for anything but a valid state of a version this library reads.
public final class PrefixState: @unchecked Sendable {
    let handle: OpaquePointer

    init(handle: OpaquePointer) { self.handle = handle }

    /// Reads the binary form.
    public convenience init(bytes: [UInt8]) throws {
        let handle = try bytes.withUnsafeBufferPointer { buffer in
            try create { ctxpack_prefix_state_from_bytes(buffer.baseAddress, buffer.count, $0, $1) }
        }
        self.init(handle: handle)
    }

    /// Reads the JSON form.
    public convenience init(json: String) throws {
        let arena = CArena()
        let text = arena.str(json)
        let handle = try withExtendedLifetime(arena) { try create { ctxpack_prefix_state_from_json(text, $0, $1) } }
        self.init(handle: handle)
    }

    deinit { ctxpack_prefix_state_free(handle) }

    /// The binary form.
    public func bytes() throws -> [UInt8] {
        var len = 0
        try check(ctxpack_prefix_state_to_bytes(handle, nil, 0, &len), nil, "ctxpack_prefix_state_to_bytes")
        var out = [UInt8](repeating: 0, count: len)
        let capacity = len
        try out.withUnsafeMutableBufferPointer { buffer in
            try check(ctxpack_prefix_state_to_bytes(handle, buffer.baseAddress, capacity, &len), nil,
                      "ctxpack_prefix_state_to_bytes")
        }
        return out
    }

    /// The JSON form.
    public func json() throws -> String {
        let text = try create { ctxpack_prefix_state_json(handle, $0, $1) }
        defer { ctxpack_string_free(text) }
        var value = ctxpack_str(ptr: nil, len: 0)
        try check(ctxpack_string_value(text, &value), nil, "ctxpack_string_value")
        return string(value)
    }

    /// The turn number (1 for the first turn of a chain), the items of the state's window
    /// and their tokens.
    public func info() throws -> PrefixStateInfo {
        var turn: UInt64 = 0
        var entries = 0
        var tokens: Int64 = 0
        try check(ctxpack_prefix_state_info(handle, &turn, &entries, &tokens), nil, "ctxpack_prefix_state_info")
        return PrefixStateInfo(turn: turn, entries: entries, tokens: tokens)
    }
}

/// What a prefix state holds (`PrefixState.info()`).
public struct PrefixStateInfo: Sendable, Equatable {
    /// The turn number (1 for the first turn of a chain).
    public let turn: UInt64
    /// The items of the state's window.
    public let entries: Int
    /// Their tokens.
    public let tokens: Int64
}

/// The outcome of `Pipeline.runPrefix`.
public struct PrefixRun: Sendable {
    public let result: RunResult
    public let reuse: Reuse
    /// This turn's state, for the next turn's `previous`.
    public let state: PrefixState
}

/// Options of a prefix run; the defaults are Hold, no key, no caching rule and the
/// default thresholds.
public struct PrefixOptions: Sendable {
    public var mode: PrefixMode = .hold
    /// Names the conversation (any bytes; empty for none).
    public var conversation: [UInt8] = []
    /// "" or "none", "openai", "anthropic", "anthropic:MIN", "vllm", "blocks:N".
    public var cacheRule: String = ""
    /// Hold's thresholds; nil: 0.05 and 0.8.
    public var maxValueLoss: Double? = nil
    public var lowWatermark: Double? = nil

    public init(mode: PrefixMode = .hold) { self.mode = mode }
}

/// Where and why the new window stops matching the previous one.
public struct Difference: Sendable {
    public let index: Int
    public let reason: DifferenceReason
    /// The input position of the new window's item there; nil when it ends there.
    public let item: Int?
    public let previousPosition: UInt32
}

/// The reuse report of a prefix run (docs/prefix-cache.md §4).
public struct Reuse: Sendable {
    public let mode: PrefixMode
    public let outcome: TurnOutcome
    public let turn: UInt64, turnsSinceAnchor: UInt64
    public let previousEntries: Int, previousTokens: Int64
    public let windowEntries: Int, windowTokens: Int64
    public let keptEntries: Int, keptTokens: Int64, cachedTokens: Int64
    public let anchorTarget: Int64
    public let freshValue: Double, value: Double, valueGivenUp: Double
    /// Nil when the previous window is a prefix of the new one (or there was none).
    public let difference: Difference?
    /// The report's JSON form.
    public let json: String
}

extension Pipeline {
    /// Runs the pipeline with the previous turn's state (nil on a first turn): the result,
    /// the reuse report and this turn's state.
    public func runPrefix(
        _ items: Items, budget: Budget, options: PrefixOptions = PrefixOptions(), previous: PrefixState? = nil,
        trace: TraceDetail = .none
    ) throws -> PrefixRun {
        var run = ctxpack_run_options.sized()
        run.trace_detail = trace.rawValue
        let arena = CArena()
        var o = cPrefixOptions(options, arena)
        var result: OpaquePointer? = nil
        var state: OpaquePointer? = nil
        try withExtendedLifetime((items, budget, previous, arena)) {
            try call {
                ctxpack_pipeline_run_prefix(handle, items.handle, budget.handle, &run, &o, previous?.handle, &result, &state, $0)
            }
        }
        let owned = ResultHandle(result!)
        let next = PrefixState(handle: state!)
        let reuse = try owned.with { r in
            try readReuse(
                fill: { ctxpack_result_prefix_reuse(r, $0, $1) },
                json: { ctxpack_result_prefix_reuse_json(r, $0, $1) })
        }
        return PrefixRun(result: try readResult(owned), reuse: reuse, state: next)
    }
}

/// The C form of `options`; its strings live in `arena`.
func cPrefixOptions(_ options: PrefixOptions, _ arena: CArena) -> ctxpack_prefix_options {
    var o = ctxpack_prefix_options.sized()
    o.mode = options.mode.rawValue
    if !options.conversation.isEmpty {
        let key = arena.array(options.conversation)
        o.conversation = ctxpack_str(
            ptr: UnsafeRawPointer(key!).assumingMemoryBound(to: CChar.self), len: options.conversation.count)
    }
    o.cache_rule = arena.str(options.cacheRule)
    if options.maxValueLoss != nil || options.lowWatermark != nil {
        o.custom_thresholds = 1
        o.max_value_loss = options.maxValueLoss ?? 0.05
        o.low_watermark = options.lowWatermark ?? 0.8
    }
    return o
}

/// A reuse report read with `fill` (the struct) and `json` (its JSON form), for prefix runs
/// and chat trims alike.
func readReuse(
    fill: (UnsafeMutablePointer<ctxpack_prefix_reuse>, UnsafeMutablePointer<OpaquePointer?>) -> Int32,
    json: (UnsafeMutablePointer<OpaquePointer?>, UnsafeMutablePointer<OpaquePointer?>) -> Int32
) throws -> Reuse {
    var r = ctxpack_prefix_reuse.sized()
    try call { fill(&r, $0) }
    let text = try create { json($0, $1) }
    defer { ctxpack_string_free(text) }
    var value = ctxpack_str(ptr: nil, len: 0)
    try check(ctxpack_string_value(text, &value), nil, "ctxpack_string_value")
    let difference: Difference? =
        r.has_difference == 0
        ? nil
        : Difference(
            index: r.difference_index, reason: DifferenceReason(rawValue: r.difference_reason) ?? .removed,
            item: r.difference_item < 0 ? nil : r.difference_item,  // SIZE_MAX reads as -1
            previousPosition: r.difference_previous_position)
    return Reuse(
        mode: PrefixMode(rawValue: r.mode) ?? .hold, outcome: TurnOutcome(rawValue: r.outcome) ?? .measured,
        turn: r.turn, turnsSinceAnchor: r.turns_since_anchor,
        previousEntries: r.previous_entries, previousTokens: r.previous_tokens,
        windowEntries: r.window_entries, windowTokens: r.window_tokens,
        keptEntries: r.kept_entries, keptTokens: r.kept_tokens, cachedTokens: r.cached_tokens,
        anchorTarget: r.anchor_target, freshValue: r.fresh_value, value: r.value, valueGivenUp: r.value_given_up,
        difference: difference, json: string(value))
}
