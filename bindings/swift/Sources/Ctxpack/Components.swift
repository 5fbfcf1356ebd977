import CCtxpack
import Foundation

// Scorers, slicers and placers. Each class owns one reference to a reference-counted
// component: a composite, scaled or quota component and a pipeline keep their own, so a
// component may go into many of them and be released whenever Swift is done with it.
// The numeric values of the enumerations below are the header's and never change.
//
// The classes are `@unchecked Sendable`: their only stored property is a handle that is
// never reassigned, to a component the library never changes after construction and
// allows to be used from many threads at once (docs/ffi.md, "Threads"). Closures of
// custom components are `@Sendable` for the same reason: concurrent runs call them
// concurrently.

public enum Scarcity: Int32, Sendable {
    case degrade = 0
    case `throw` = 1
}

/// The curve of a decay scorer. The library counts durations in whole nanoseconds
/// (`.nanoseconds(n)` gives an exact one); a longer one than 64 bits hold is
/// `Status.invalidArgument`.
@available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
public enum DecayCurve: Sendable {
    case exponential(halfLife: Duration)
    case window(maxAge: Duration)
    /// Windows youngest first: the score of the first window with `age < maxAge`.
    case step([DecayWindow])
}

/// One window of a step decay curve.
@available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
public struct DecayWindow: Sendable {
    public var maxAge: Duration
    public var score: Double
    public init(maxAge: Duration, score: Double) {
        self.maxAge = maxAge
        self.score = score
    }
}

/// A child of a composite scorer with its raw weight (the weights are normalised by their
/// sum).
public struct WeightedScorer: Sendable {
    public var scorer: Scorer
    public var weight: Double
    public init(_ scorer: Scorer, weight: Double) {
        self.scorer = scorer
        self.weight = weight
    }
}

public struct QuotaEntry: Sendable {
    public var kind: String
    public var require: Double  // percent of the target, [0, 100]
    public var cap: Double  // percent of the target, [require, 100]
    public init(kind: String, require: Double, cap: Double) {
        self.kind = kind
        self.require = require
        self.cap = cap
    }
}

public struct CountQuotaEntry: Sendable {
    public var kind: String
    public var requireCount: Int
    public var capCount: Int
    public init(kind: String, requireCount: Int, capCount: Int) {
        self.kind = kind
        self.requireCount = requireCount
        self.capCount = capCount
    }
}

/// A per-item scorer: the score of `items[index]`, computed against all of `items`.
public typealias ScoreItemClosure = @Sendable (_ items: ItemsView, _ index: Int) throws -> Double
/// A batch scorer: one score per item of `items`, in order, computed in one call per run.
public typealias ScoreAllClosure = @Sendable (_ items: ItemsView) throws -> [Double]
/// A slicer: the positions in `items` to keep (each at most once, any order). `items`
/// are the candidates sorted by score, highest first, with their `scores`; the budget is
/// the run's effective one.
public typealias SliceClosure = @Sendable (_ items: ItemsView, _ scores: [Double], _ targetTokens: Int64,
                                           _ maxTokens: Int64) throws -> [Int]
/// A placer: a permutation of `0..<items.count`, the position placed first first.
public typealias PlaceClosure = @Sendable (_ items: ItemsView, _ scores: [Double]) throws -> [Int]

public final class Scorer: @unchecked Sendable {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { ctxpack_scorer_free(handle) }

    /// KindScorer: the default weights, or `weights` replacing them.
    public static func kind(weights: [String: Double]? = nil) throws -> Scorer {
        guard let weights = weights else { return try Scorer(create { ctxpack_scorer_new_kind($0, $1) }) }
        let arena = CArena()
        let table = weights.sorted { $0.key < $1.key }.map { ctxpack_kind_weight(kind: arena.str($0.key), weight: $0.value) }
        return try withExtendedLifetime(arena) {
            try Scorer(create { ctxpack_scorer_new_kind_weights(table, table.count, $0, $1) })
        }
    }

    public static func tag(weights: [String: Double]) throws -> Scorer {
        let arena = CArena()
        let table = weights.sorted { $0.key < $1.key }.map { ctxpack_tag_weight(tag: arena.str($0.key), weight: $0.value) }
        return try withExtendedLifetime(arena) {
            try Scorer(create { ctxpack_scorer_new_tag(table, table.count, $0, $1) })
        }
    }

    /// The weighted sum of the children's scores (weights normalised by their sum); the
    /// composite keeps its own reference to each child.
    public static func composite(_ children: [WeightedScorer]) throws -> Scorer {
        let table = children.map { ctxpack_composite_child(scorer: $0.scorer.handle, weight: $0.weight) }
        return try withExtendedLifetime(children) {
            try Scorer(create { ctxpack_scorer_new_composite(table, table.count, $0, $1) })
        }
    }

    /// Min-max normalisation of `inner`.
    public static func scaled(_ inner: Scorer) throws -> Scorer {
        try withExtendedLifetime(inner) { try Scorer(create { ctxpack_scorer_new_scaled(inner.handle, $0, $1) }) }
    }

    /// DecayScorer. `fixedNow` nil means the system clock; `nullTimestampScore` nil means
    /// the library's default for undated items.
    @available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
    public static func decay(_ curve: DecayCurve, fixedNow: Date? = nil, nullTimestampScore: Double? = nil)
        throws -> Scorer
    {
        try decay(curve, fixedNowNs: fixedNow.map { try nanoseconds(since1970: $0) },
                  nullTimestampScore: nullTimestampScore)
    }

    /// DecayScorer with "now" given exactly, in nanoseconds since the Unix epoch (UTC); nil
    /// means the system clock.
    @available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
    public static func decay(_ curve: DecayCurve, fixedNowNs: Int64?, nullTimestampScore: Double? = nil)
        throws -> Scorer
    {
        let arena = CArena()
        var config = ctxpack_decay_config.sized()
        switch curve {
        case .exponential(let halfLife):
            config.curve = 0
            config.half_life_ns = try halfLife.wholeNanoseconds()
        case .window(let maxAge):
            config.curve = 1
            config.max_age_ns = try maxAge.wholeNanoseconds()
        case .step(let steps):
            config.curve = 2
            let windows = try steps.map {
                ctxpack_decay_window(max_age_ns: try $0.maxAge.wholeNanoseconds(), score: $0.score)
            }
            config.windows = arena.array(windows)
            config.window_count = windows.count
        }
        config.clock = fixedNowNs == nil ? 0 : 1
        config.fixed_now_ns = fixedNowNs ?? 0
        config.has_null_timestamp_score = flag(nullTimestampScore != nil)
        config.null_timestamp_score = nullTimestampScore ?? 0
        return try withExtendedLifetime(arena) {
            try Scorer(create { ctxpack_scorer_new_decay(&config, $0, $1) })
        }
    }

    public static func metadataTrust(defaultScore: Double = 0.5) throws -> Scorer {
        try Scorer(create { ctxpack_scorer_new_metadata_trust(defaultScore, $0, $1) })
    }

    public static func metadataKey(_ key: String, equals value: String, boost: Double) throws -> Scorer {
        let arena = CArena()
        let k = arena.str(key), v = arena.str(value)
        return try withExtendedLifetime(arena) {
            try Scorer(create { ctxpack_scorer_new_metadata_key(k, v, boost, $0, $1) })
        }
    }

    public static func recency() throws -> Scorer { try Scorer(create { ctxpack_scorer_new_recency($0, $1) }) }
    public static func priority() throws -> Scorer { try Scorer(create { ctxpack_scorer_new_priority($0, $1) }) }
    public static func frequency() throws -> Scorer { try Scorer(create { ctxpack_scorer_new_frequency($0, $1) }) }
    public static func reflexive() throws -> Scorer { try Scorer(create { ctxpack_scorer_new_reflexive($0, $1) }) }

    /// A scorer implemented by a closure, called once per item. A thrown error fails the
    /// run with `Status.callback` and the error's description. The closure may be called
    /// from several threads at once when one pipeline runs on several threads.
    public static func custom(_ score: @escaping ScoreItemClosure) throws -> Scorer {
        try Scorer(createCustom(score) { userData, out, error in
            ctxpack_scorer_new_custom_item(scoreItemThunk, userData, releaseCallbackBox, out, error)
        })
    }

    /// A scorer implemented by a closure called once per run with every item, which returns
    /// one finite score per item, in order. Another count, or a thrown error, fails the run
    /// with `Status.callback`; so does a score that is not finite. Concurrent runs call it
    /// concurrently.
    public static func customBatch(_ score: @escaping ScoreAllClosure) throws -> Scorer {
        try Scorer(createCustom(score) { userData, out, error in
            ctxpack_scorer_new_custom_batch(scoreAllThunk, userData, releaseCallbackBox, out, error)
        })
    }

    /// Scores every item of `items` against the whole list, in list order.
    public func score(_ items: Items) throws -> [Double] {
        let count = try items.count
        var scores = [Double](repeating: 0, count: count)
        try withExtendedLifetime(items) {
            try call { ctxpack_scorer_score(handle, items.handle, &scores, count, $0) }
        }
        return scores
    }
}

private let scoreItemThunk: ctxpack_score_item_fn = { userData, items, count, index, outScore, failure in
    let score = CallbackBox<ScoreItemClosure>.unbox(userData)
    return reportingFailure(failure) {
        outScore!.pointee = try ViewScope.during { try score(ItemsView(items, count: count, scope: $0), index) }
    }
}

private let scoreAllThunk: ctxpack_score_all_fn = { userData, items, count, outScores, failure in
    let score = CallbackBox<ScoreAllClosure>.unbox(userData)
    return reportingFailure(failure) {
        let scores = try ViewScope.during { try score(ItemsView(items, count: count, scope: $0)) }
        guard scores.count == count else {
            throw CallbackCountError(what: "batch scorer", returned: scores.count, limit: count, unit: "scores")
        }
        for (k, value) in scores.enumerated() { outScores![k] = value }
    }
}

/// What a slicer run alone selected (`Slicer.slice`), as positions in its input.
public struct SliceResult: Sendable {
    /// The chosen positions, in the order the slicer returned them.
    public let selected: [Int]
    /// The positions a count-quota slicer left out because their kind was at its cap.
    public let capExcluded: [Int]
    /// The count requirements a count-quota slicer could not meet.
    public let shortfalls: [Shortfall]
}

public final class Slicer: @unchecked Sendable {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { ctxpack_slicer_free(handle) }

    public static func greedy() throws -> Slicer { try Slicer(create { ctxpack_slicer_new_greedy($0, $1) }) }

    /// `tableLimitBytes` 0 means the library default (256 MiB).
    public static func knapsack(bucketSize: Int64 = 100, tableLimitBytes: UInt64 = 0) throws -> Slicer {
        try Slicer(create { ctxpack_slicer_new_knapsack(bucketSize, tableLimitBytes, $0, $1) })
    }

    public static func quota(_ entries: [QuotaEntry], inner: Slicer) throws -> Slicer {
        let arena = CArena()
        let table = entries.map { ctxpack_quota_entry(kind: arena.str($0.kind), require: $0.require, cap: $0.cap) }
        return try withExtendedLifetime((arena, inner)) {
            try Slicer(create { ctxpack_slicer_new_quota(table, table.count, inner.handle, $0, $1) })
        }
    }

    public static func countQuota(_ entries: [CountQuotaEntry], inner: Slicer, scarcity: Scarcity = .degrade)
        throws -> Slicer
    {
        let arena = CArena()
        let table = countEntries(entries, arena)
        return try withExtendedLifetime((arena, inner)) {
            try Slicer(create {
                ctxpack_slicer_new_count_quota(table, table.count, inner.handle, scarcity.rawValue, $0, $1)
            })
        }
    }

    public static func countConstrainedKnapsack(
        _ entries: [CountQuotaEntry], bucketSize: Int64 = 100, tableLimitBytes: UInt64 = 0,
        scarcity: Scarcity = .degrade
    ) throws -> Slicer {
        let arena = CArena()
        let table = countEntries(entries, arena)
        return try withExtendedLifetime(arena) {
            try Slicer(create {
                ctxpack_slicer_new_count_constrained_knapsack(table, table.count, bucketSize, tableLimitBytes,
                                                              scarcity.rawValue, $0, $1)
            })
        }
    }

    /// A slicer implemented by a closure. Positions out of range or repeated fail the run
    /// with `Status.callback`; a thrown error fails it with the error's description.
    public static func custom(_ slice: @escaping SliceClosure) throws -> Slicer {
        try Slicer(createCustom(slice) { userData, out, error in
            ctxpack_slicer_new_custom(sliceThunk, userData, releaseCallbackBox, out, error)
        })
    }

    /// Runs the slicer alone over `items` with one score per item, against `budget` exactly
    /// as given (no pinned-item or reserve adjustment). Items with a group are selected
    /// whole or not at all, a group being worth its members' scores combined by
    /// `groupValue`.
    public func slice(_ items: Items, scores: [Double], budget: Budget, groupValue: GroupValue = .sum) throws
        -> SliceResult
    {
        let result = try withExtendedLifetime((items, budget)) {
            try create {
                ctxpack_slicer_slice_with_group_value(handle, items.handle, scores, scores.count, budget.handle,
                                                      groupValue.rawValue, $0, $1)
            }
        }
        defer { ctxpack_slice_result_free(result) }
        let selected: [Int] = try copyArray("ctxpack_slice_result_selected") { ctxpack_slice_result_selected(result, $0, $1) }
        let capExcluded: [Int] = try copyArray("ctxpack_slice_result_cap_excluded") {
            ctxpack_slice_result_cap_excluded(result, $0, $1)
        }
        var count = 0
        try check(ctxpack_slice_result_shortfall_count(result, &count), nil, "ctxpack_slice_result_shortfall_count")
        let shortfalls: [Shortfall] = try (0..<count).map { i in
            var s = ctxpack_shortfall.sized()
            try call { ctxpack_slice_result_shortfall(result, i, &s, $0) }
            return Shortfall(kind: string(s.kind), requiredCount: s.required_count, satisfiedCount: s.satisfied_count)
        }
        return SliceResult(selected: selected, capExcluded: capExcluded, shortfalls: shortfalls)
    }

    private static func countEntries(_ entries: [CountQuotaEntry], _ arena: CArena) -> [ctxpack_count_quota_entry] {
        entries.map {
            ctxpack_count_quota_entry(kind: arena.str($0.kind), require_count: $0.requireCount, cap_count: $0.capCount)
        }
    }
}

private let sliceThunk: ctxpack_slice_fn = { userData, items, scores, count, target, max, outPositions, outCount,
    failure in
    let slice = CallbackBox<SliceClosure>.unbox(userData)
    return reportingFailure(failure) {
        let chosen = try ViewScope.during {
            try slice(ItemsView(items, count: count, scope: $0), doubles(scores, count), target, max)
        }
        // The buffer holds `count` positions; the library checks the values.
        guard chosen.count <= count else { throw CallbackCountError(what: "slicer", returned: chosen.count, limit: count) }
        for (k, position) in chosen.enumerated() { outPositions![k] = position }
        outCount!.pointee = chosen.count
    }
}

public final class Placer: @unchecked Sendable {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { ctxpack_placer_free(handle) }

    public static func chronological() throws -> Placer {
        try Placer(create { ctxpack_placer_new_chronological($0, $1) })
    }

    public static func uShaped() throws -> Placer { try Placer(create { ctxpack_placer_new_u_shaped($0, $1) }) }

    /// A placer implemented by a closure. It must return a permutation of the positions;
    /// anything else fails the run with `Status.callback`.
    public static func custom(_ place: @escaping PlaceClosure) throws -> Placer {
        try Placer(createCustom(place) { userData, out, error in
            ctxpack_placer_new_custom(placeThunk, userData, releaseCallbackBox, out, error)
        })
    }

    /// Runs the placer alone: the placement order of `items` (a permutation of their
    /// positions) given one score per item. The members of a group end up next to each
    /// other, in list order.
    public func place(_ items: Items, scores: [Double], groupValue: GroupValue = .sum) throws -> [Int] {
        var order = [Int](repeating: 0, count: scores.count)
        try withExtendedLifetime(items) {
            try call {
                ctxpack_placer_place_with_group_value(handle, items.handle, scores, scores.count, groupValue.rawValue,
                                                      &order, $0)
            }
        }
        return order
    }
}


/// A closure that returned more positions than its buffer holds (a slicer), or not one
/// per item (a placer).
struct CallbackCountError: Error, CustomStringConvertible {
    let what: String, returned: Int, limit: Int
    var unit = "positions"
    var description: String { "custom \(what) returned \(returned) \(unit) for \(limit) items" }
}

private let placeThunk: ctxpack_place_fn = { userData, items, scores, count, outOrder, failure in
    let place = CallbackBox<PlaceClosure>.unbox(userData)
    return reportingFailure(failure) {
        let order = try ViewScope.during { try place(ItemsView(items, count: count, scope: $0), doubles(scores, count)) }
        // The buffer holds exactly `count` positions; the library checks the values.
        guard order.count == count else { throw CallbackCountError(what: "placer", returned: order.count, limit: count) }
        for (k, position) in order.enumerated() { outOrder![k] = position }
    }
}
