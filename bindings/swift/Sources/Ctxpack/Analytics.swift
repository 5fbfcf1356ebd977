import CCtxpack

// Analytics (spec 07 §4-7): dry runs, budget simulation, sensitivity comparisons and the
// report helpers. Items are positions in the caller's list everywhere.

/// Whether a quota counts percent of the budget's target or items.
public enum QuotaMode: Int32, Sendable {
    case percentage = 0
    case count = 1
}

/// How fully one quota constraint of the run's slicer is used.
public struct KindQuotaUtilization: Sendable, Equatable {
    /// The constraint's kind, as configured.
    public let kind: String
    /// nil: a mode this version does not know.
    public let mode: QuotaMode?
    /// The requirement and the cap: percent of the target, or counts.
    public let require: Double
    public let cap: Double
    /// The included tokens of the kind in percent of the target, or its included items.
    public let actual: Double
    /// `actual / cap` clamped to [0, 1]; 0 when the cap is 0.
    public let utilization: Double
}

/// The report helpers of spec 07 §7, computed for a traced result when first asked
/// (`Report.analytics`).
public struct Analytics: Sendable, Equatable {
    /// The included tokens over the run's `maxTokens` (not clamped; 0 when it is 0).
    public let budgetUtilization: Double
    /// The number of distinct kinds (ASCII case-insensitive) among the included items.
    public let kindDiversity: Int
    /// The share of included items that have a timestamp, in [0, 1].
    public let timestampCoverage: Double
    /// One entry per quota constraint of the run's slicer, sorted by kind (none for a
    /// slicer without quotas; wrapped slicers are not searched).
    public let quotaUtilization: [KindQuotaUtilization]
}

extension ctxpack_kind_quota_utilization: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_kind_quota_utilization_init(v, n) }
}

/// The report helpers of a traced result (which keeps the run's budget and slicer);
/// `Report.analytics` reads them on first access.
func readAnalytics(_ r: OpaquePointer) throws -> Analytics {
    var budgetUse = 0.0, coverage = 0.0
    var kinds = 0
    try check(ctxpack_result_budget_utilization(r, &budgetUse), nil, "ctxpack_result_budget_utilization")
    try check(ctxpack_result_kind_diversity(r, &kinds), nil, "ctxpack_result_kind_diversity")
    try check(ctxpack_result_timestamp_coverage(r, &coverage), nil, "ctxpack_result_timestamp_coverage")
    let quotas = try create { ctxpack_result_quota_utilization(r, $0, $1) }
    defer { ctxpack_quota_utilization_free(quotas) }
    var count = 0
    try check(ctxpack_quota_utilization_count(quotas, &count), nil, "ctxpack_quota_utilization_count")
    let entries: [KindQuotaUtilization] = try (0..<count).map { i in
        var e = ctxpack_kind_quota_utilization.sized()
        try call { ctxpack_quota_utilization_entry(quotas, i, &e, $0) }
        return KindQuotaUtilization(kind: string(e.kind), mode: QuotaMode(rawValue: e.mode), require: e.require,
                                    cap: e.cap, actual: e.actual, utilization: e.utilization)
    }
    return Analytics(budgetUtilization: budgetUse, kindDiversity: kinds, timestampCoverage: coverage,
                     quotaUtilization: entries)
}

extension Pipeline {
    /// The run traced at item detail (spec 07 §4): its `report` is always there.
    public func dryRun(_ items: Items, budget: Budget) throws -> RunResult {
        let result = try withExtendedLifetime((items, budget)) {
            try create { ctxpack_pipeline_dry_run(handle, items.handle, budget.handle, $0, $1) }
        }
        return try readResult(ResultHandle(result))
    }

    /// Budget simulation (spec 07 §5.1): the items included under `budget` that drop out
    /// when it shrinks by `slack` tokens (its max and its target), as positions in `items`
    /// in placed order. `slack` 0 gives none; a negative slack grows the budget. A
    /// percentage quota slicer is `Status.pipelineConfig` (its inclusion is not monotonic);
    /// a budget that cannot shrink that far is `Status.invalidBudget`.
    public func marginalItems(_ items: Items, budget: Budget, slack: Int64) throws -> [Int] {
        var positions = [Int](repeating: 0, count: try items.count)
        var count = 0
        try withExtendedLifetime((items, budget)) {
            try call {
                ctxpack_pipeline_marginal_items(handle, items.handle, budget.handle, slack, &positions,
                                                positions.count, &count, $0)
            }
        }
        return Array(positions.prefix(count))
    }

    /// Budget simulation (spec 07 §5.2): the smallest budget (max = target = b, no reserve,
    /// slots or margin) in [tokens of the item, `ceiling`] at which the item at position
    /// `target` of `items` is included; nil when not even `ceiling` includes it. Quota
    /// slicers are `Status.pipelineConfig`; a position outside the list or a ceiling below
    /// the item's tokens is `Status.invalidArgument`.
    public func minBudget(for target: Int, in items: Items, ceiling: Int64) throws -> Int64? {
        guard target >= 0 else { throw CtxpackError(status: .invalidArgument, message: "target \(target) is negative") }
        var found = false
        var budget: Int64 = 0
        try withExtendedLifetime(items) {
            try call { ctxpack_pipeline_min_budget_for(handle, items.handle, target, ceiling, &found, &budget, $0) }
        }
        return found ? budget : nil
    }
}

/// Whether a variant of a sensitivity comparison includes an item.
public enum ItemStatus: Int32, Sendable {
    /// A value this version does not know (not in the C enumeration).
    case unknown = 0
    case included = 1
    case excluded = 2
}

/// One labelled pipeline of a sensitivity comparison.
public struct SensitivityVariant: Sendable {
    /// Any text; labels need not be unique.
    public var label: String
    public var pipeline: Pipeline
    public init(_ label: String, _ pipeline: Pipeline) {
        self.label = label
        self.pipeline = pipeline
    }
}

/// An item whose inclusion differs between the variants.
public struct Swing: Sendable, Equatable {
    /// Its position in the item list.
    public let index: Int
    /// One per variant, in variant order.
    public let statuses: [ItemStatus]
}

/// The outcome of comparing pipelines over the same items and budget (spec 07 §6).
public struct Sensitivity: Sendable {
    /// Per variant, in the order given.
    public let labels: [String]
    /// Each variant's dry run (with its report).
    public let results: [RunResult]
    /// The items that at least one variant includes and another excludes, matched by
    /// their position in the list, in list order.
    public let swings: [Swing]

    /// Dry-runs every variant (two or more; fewer is `Status.invalidArgument`) over `items`
    /// within `budget`, in order; the first failing run's error is thrown as it is.
    public static func compare(_ items: Items, budget: Budget, variants: [SensitivityVariant]) throws -> Sensitivity {
        let arena = CArena()
        let table = variants.map { ctxpack_sensitivity_variant(label: arena.str($0.label), pipeline: $0.pipeline.handle) }
        let sensitivity = try withExtendedLifetime((items, budget, variants, arena)) {
            try create { ctxpack_sensitivity_new(items.handle, budget.handle, table, table.count, $0, $1) }
        }
        defer { ctxpack_sensitivity_free(sensitivity) }
        var count = 0
        try check(ctxpack_sensitivity_variant_count(sensitivity, &count), nil, "ctxpack_sensitivity_variant_count")
        var labels: [String] = []
        var results: [RunResult] = []
        for i in 0..<count {
            var label = ctxpack_str(ptr: nil, len: 0)
            try check(ctxpack_sensitivity_variant_label(sensitivity, i, &label), nil, "ctxpack_sensitivity_variant_label")
            labels.append(string(label))
            // The result outlives the sensitivity object; its report keeps it.
            let result = try create { ctxpack_sensitivity_variant_result(sensitivity, i, $0, $1) }
            results.append(try readResult(ResultHandle(result)))
        }
        try check(ctxpack_sensitivity_diff_count(sensitivity, &count), nil, "ctxpack_sensitivity_diff_count")
        let swings: [Swing] = try (0..<count).map { i in
            var index = 0, n = 0
            var statuses: UnsafePointer<Int32>? = nil
            try check(ctxpack_sensitivity_diff(sensitivity, i, &index, &statuses, &n), nil, "ctxpack_sensitivity_diff")
            let raw = UnsafeBufferPointer(start: n > 0 ? statuses : nil, count: n)
            return Swing(index: index, statuses: raw.map { ItemStatus(rawValue: $0) ?? .unknown })
        }
        return Sensitivity(labels: labels, results: results, swings: swings)
    }
}
