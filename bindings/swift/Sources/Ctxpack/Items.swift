import CCtxpack
import Foundation

/// A cheaper alternative form of an item (docs/variants.md): a summary, an excerpt or a
/// stub placed instead of the item, never in addition. `tokens` >= 0; `quality` in (0, 1]
/// is the share of the item's value the form keeps. A variant with as many tokens as its
/// item or more is accepted and pruned (`Report.prunedForms`).
public struct Variant: Sendable, Equatable {
    public var content: String
    public var tokens: Int64
    public var quality: Double

    public init(content: String, tokens: Int64, quality: Double) {
        self.content = content
        self.tokens = tokens
        self.quality = quality
    }
}

/// One candidate item: every field of the data model. An empty `kind` or `source` means
/// the default (`Message`, `Chat`). The library copies everything when it is appended.
public struct Item: Sendable {
    public var content: String
    public var tokens: Int64
    public var kind: String
    public var source: String
    public var priority: Int64?
    public var tags: [String]
    public var metadata: [String: String]
    /// When the item was made (a `Date` or exact nanoseconds, as it was set).
    var instant: Instant?
    public var futureRelevanceHint: Double?
    public var pinned: Bool
    public var originalTokens: Int64?
    /// The group key (docs/groups.md): items with equal keys are selected or dropped
    /// together and placed next to each other. Empty: no group.
    public var group: String
    /// A built-in encoding ("o200k_base", "cl100k_base") with which the library counts
    /// `content` (`tokens` must then be 0). Empty: `tokens` is the caller's count.
    public var encoding: String
    /// Cheaper alternative forms, richest first by convention: a run may place one of them
    /// instead of the item (`RunResult.forms` says which).
    public var variants: [Variant]

    /// An item; `timestamp` is when it was made (the library counts whole nanoseconds
    /// since 1970, so `append` refuses a date outside the years 1677 to 2262 with
    /// `Status.invalidArgument`).
    public init(
        content: String, tokens: Int64, kind: String = "", source: String = "", priority: Int64? = nil,
        tags: [String] = [], metadata: [String: String] = [:], timestamp: Date? = nil,
        futureRelevanceHint: Double? = nil, pinned: Bool = false, originalTokens: Int64? = nil,
        group: String = "", encoding: String = "",
        variants: [Variant] = []
    ) {
        self.content = content
        self.tokens = tokens
        self.kind = kind
        self.source = source
        self.priority = priority
        self.tags = tags
        self.metadata = metadata
        self.instant = timestamp.map { .date($0) }
        self.futureRelevanceHint = futureRelevanceHint
        self.pinned = pinned
        self.originalTokens = originalTokens
        self.group = group
        self.encoding = encoding
        self.variants = variants
    }

    /// The same item with its timestamp given exactly, in nanoseconds since the Unix epoch
    /// (UTC), as the library counts it.
    public init(
        content: String, tokens: Int64, kind: String = "", source: String = "", priority: Int64? = nil,
        tags: [String] = [], metadata: [String: String] = [:], timestampNs: Int64?,
        futureRelevanceHint: Double? = nil, pinned: Bool = false, originalTokens: Int64? = nil,
        group: String = "", encoding: String = "",
        variants: [Variant] = []
    ) {
        self.init(
            content: content, tokens: tokens, kind: kind, source: source, priority: priority, tags: tags,
            metadata: metadata, timestamp: nil, futureRelevanceHint: futureRelevanceHint, pinned: pinned,
            originalTokens: originalTokens, group: group, encoding: encoding, variants: variants)
        self.timestampNs = timestampNs
    }

    /// When the item was made; nil for an undated item.
    public var timestamp: Date? {
        get {
            switch instant {
            case .date(let d): return d
            case .nanoseconds(let ns): return date(nanoseconds: ns)
            case nil: return nil
            }
        }
        set { instant = newValue.map { .date($0) } }
    }

    /// The timestamp in nanoseconds since the Unix epoch, UTC, exactly as the library
    /// receives it; nil for an undated item, or for a `Date` outside the years 1677 to
    /// 2262 (which `append` refuses).
    public var timestampNs: Int64? {
        get {
            switch instant {
            case .date(let d): return try? nanoseconds(since1970: d)
            case .nanoseconds(let ns): return ns
            case nil: return nil
            }
        }
        set { instant = newValue.map { .nanoseconds($0) } }
    }

    /// The C descriptor; its strings and arrays live in `arena`.
    func descriptor(in arena: CArena) throws -> ctxpack_item_desc {
        var d = ctxpack_item_desc.sized()
        d.content = arena.str(content)
        d.tokens = tokens
        d.kind = arena.str(kind)
        d.source = arena.str(source)
        d.has_priority = flag(priority != nil)
        d.priority = priority ?? 0
        d.tags = arena.array(tags.map { arena.str($0) })
        d.tag_count = tags.count
        let entries = metadata.sorted { $0.key < $1.key }.map {
            ctxpack_metadata_entry(key: arena.str($0.key), value: arena.str($0.value))
        }
        d.metadata = arena.array(entries)
        d.metadata_count = entries.count
        switch instant {
        case .date(let date):
            d.has_timestamp = 1
            d.timestamp_ns = try nanoseconds(since1970: date)
        case .nanoseconds(let ns):
            d.has_timestamp = 1
            d.timestamp_ns = ns
        case nil:
            break
        }
        d.has_future_relevance_hint = flag(futureRelevanceHint != nil)
        d.future_relevance_hint = futureRelevanceHint ?? 0
        d.pinned = flag(pinned)
        d.has_original_tokens = flag(originalTokens != nil)
        d.original_tokens = originalTokens ?? 0
        d.group = arena.str(group)
        d.encoding = arena.str(encoding)
        let forms: [ctxpack_variant_desc] = variants.map {
            var v = ctxpack_variant_desc.sized()
            v.content = arena.str($0.content)
            v.tokens = $0.tokens
            v.quality = $0.quality
            return v
        }
        d.variants = arena.array(forms)
        d.variant_count = forms.count
        return d
    }
}

/// How an item's timestamp was given.
enum Instant: Sendable {
    case date(Date)
    case nanoseconds(Int64)
}

/// The list of candidates; results identify items by their position here. Usable from
/// many threads at once, `append` and `removeAll` included: the library serialises
/// changes, and each run works on the list as it was when the run started (hence
/// `@unchecked Sendable`: its only stored property is a handle never reassigned).
public final class Items: @unchecked Sendable {
    let handle: OpaquePointer

    public init() throws {
        handle = try create { ctxpack_items_new($0, $1) }
    }

    public convenience init(_ items: [Item]) throws {
        try self.init()
        try append(contentsOf: items)
    }

    deinit { ctxpack_items_free(handle) }

    public func append(_ item: Item) throws {
        let arena = CArena()
        var desc = try item.descriptor(in: arena)
        try withExtendedLifetime(arena) {
            try call { ctxpack_items_push(handle, &desc, $0) }
        }
    }

    /// All or nothing: on error nothing is appended, and the message starts "item <i>:".
    public func append(contentsOf items: [Item]) throws {
        let arena = CArena()
        let descs = try batchDescriptors(items, in: arena)
        try withExtendedLifetime(arena) {
            try call { ctxpack_items_push_many(handle, descs, descs.count, $0) }
        }
    }

    /// The number of items. Throws what the library reports (nothing can fail on a live
    /// list today, but a status is never swallowed).
    public var count: Int {
        get throws {
            var n = 0
            try check(ctxpack_items_len(handle, &n), nil, "ctxpack_items_len")
            return n
        }
    }

    /// Removes every item and releases the storage; throws what the library reports.
    public func removeAll() throws {
        try check(ctxpack_items_clear(handle), nil, "ctxpack_items_clear")
    }
}

/// A validated token budget; immutable, and usable from many threads at once (see
/// Components.swift on `@unchecked Sendable`).
public final class Budget: @unchecked Sendable {
    let handle: OpaquePointer

    public init(
        maxTokens: Int64, targetTokens: Int64, outputReserve: Int64 = 0, reservedSlots: [String: Int64] = [:],
        estimationSafetyMarginPercent: Double = 0
    ) throws {
        let arena = CArena()
        let slots = reservedSlots.sorted { $0.key < $1.key }.map {
            ctxpack_reserved_slot(kind: arena.str($0.key), count: $0.value)
        }
        var desc = ctxpack_budget_desc.sized()
        desc.max_tokens = maxTokens
        desc.target_tokens = targetTokens
        desc.output_reserve = outputReserve
        desc.slots = arena.array(slots)
        desc.slot_count = slots.count
        desc.estimation_safety_margin_percent = estimationSafetyMarginPercent
        handle = try withExtendedLifetime(arena) { try create { ctxpack_budget_new(&desc, $0, $1) } }
    }

    /// Takes ownership of a budget handle a C constructor created.
    init(handle: OpaquePointer) { self.handle = handle }

    deinit { ctxpack_budget_free(handle) }
}

/// Whether the callback that handed out item views is still running. The views check it
/// on every access, so a view kept past its callback traps with a clear message instead
/// of reading memory the library has reused.
final class ViewScope {
    private(set) var isOpen = true

    /// Runs `body` with a scope that closes when it returns.
    static func during<R>(_ body: (ViewScope) throws -> R) rethrows -> R {
        let scope = ViewScope()
        defer { scope.isOpen = false }
        return try body(scope)
    }

    func checkOpen() {
        precondition(isOpen, "an ItemView or ItemsView was used after the callback that received it returned")
    }
}

/// One item as a callback sees it: a read-only view of the library's memory, which is
/// valid only during the callback. Its properties copy out of that memory. It must not
/// escape the callback: it is not `Sendable`, and using it after the callback returned
/// stops the program with a precondition failure (`isValid` tells).
public struct ItemView {
    let raw: ctxpack_item_view
    let scope: ViewScope

    /// The view, after checking that its callback is still running.
    private var item: ctxpack_item_view {
        scope.checkOpen()
        return raw
    }

    /// Whether the callback that received this view is still running.
    public var isValid: Bool { scope.isOpen }

    public var content: String { string(item.content) }
    public var tokens: Int64 { item.tokens }
    public var kind: String { string(item.kind) }
    public var source: String { string(item.source) }
    public var priority: Int64? { item.has_priority ? item.priority : nil }
    public var tags: [String] {
        let v = item
        return (0..<v.tag_count).map { string(v.tags[$0]) }
    }
    /// Nanoseconds since the Unix epoch, UTC.
    public var timestampNs: Int64? { item.has_timestamp ? item.timestamp_ns : nil }
    public var timestamp: Date? { timestampNs.map { date(nanoseconds: $0) } }
    public var futureRelevanceHint: Double? { item.has_future_relevance_hint ? item.future_relevance_hint : nil }
    public var pinned: Bool { item.pinned }
    public var originalTokens: Int64? { item.has_original_tokens ? item.original_tokens : nil }

    /// The value of a metadata key (exact, case-sensitive), if the item has it.
    public func metadata(_ key: String) -> String? {
        let v = item
        for i in 0..<v.metadata_count where string(v.metadata[i].key) == key {
            return string(v.metadata[i].value)
        }
        return nil
    }
}

@available(*, unavailable, message: "an ItemView is valid only during its callback")
extension ItemView: Sendable {}

/// The items a callback receives, valid only during the callback (see `ItemView`).
public struct ItemsView: RandomAccessCollection {
    let base: UnsafeBufferPointer<ctxpack_item_view>
    let scope: ViewScope

    init(_ items: UnsafePointer<ctxpack_item_view>?, count: Int, scope: ViewScope) {
        base = UnsafeBufferPointer(start: count > 0 ? items : nil, count: count)
        self.scope = scope
    }

    /// Whether the callback that received these views is still running.
    public var isValid: Bool { scope.isOpen }

    public var startIndex: Int { 0 }
    public var endIndex: Int { base.count }
    public subscript(position: Int) -> ItemView {
        scope.checkOpen()
        return ItemView(raw: base[position], scope: scope)
    }
}

@available(*, unavailable, message: "an ItemsView is valid only during its callback")
extension ItemsView: Sendable {}

/// The descriptors of `items`, their strings in `arena`; an item's own error is worded as
/// the library words a batch's ("item <i>: ...").
func batchDescriptors(_ items: [Item], in arena: CArena) throws -> [ctxpack_item_desc] {
    try items.enumerated().map { i, item in
        do {
            return try item.descriptor(in: arena)
        } catch let error as CtxpackError {
            throw CtxpackError(status: error.status, message: "item \(i): \(error.message)")
        }
    }
}
