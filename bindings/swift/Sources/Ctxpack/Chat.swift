import CCtxpack

// Token counting with the built-in encodings, and chat requests in, chat requests out
// (docs/tokenizer.md, docs/chat.md).

extension ctxpack_chat_options: GrowingCStruct {
    static func cInit(_ v: UnsafeMutablePointer<Self>, _ n: Int) -> Int32 { ctxpack_chat_options_init(v, n) }
}

/// One of the library's built-in tokenizer encodings (`"o200k_base"`, `"cl100k_base"`).
/// The encoding is owned by the library for the life of the process (nothing is freed)
/// and may be used from any number of threads at once.
public final class TokenEncoding: @unchecked Sendable {
    let handle: OpaquePointer
    /// The canonical name (`"o200k_base"`).
    public let name: String

    /// The encoding of that name, in any ASCII case; the first use loads it (milliseconds).
    /// An unknown name is `Status.invalidArgument`; a library built without the tokenizer
    /// feature answers `Status.unsupported`.
    public init(named name: String) throws {
        let arena = CArena()
        let cName = arena.str(name)
        var out: OpaquePointer? = nil
        try withExtendedLifetime(arena) { try call { ctxpack_encoding_get(cName, &out, $0) } }
        guard let encoding = out else { throw CtxpackError(status: .nullArgument, message: "no encoding returned") }
        var canonical = ctxpack_str(ptr: nil, len: 0)
        try check(ctxpack_encoding_name(encoding, &canonical), nil, "ctxpack_encoding_name")
        handle = encoding
        self.name = string(canonical)
    }

    /// The number of tokens of `text`; special tokens such as `<|endoftext|>` count as
    /// ordinary text.
    public func count(_ text: String) throws -> Int64 {
        let arena = CArena()
        let cText = arena.str(text)
        var n: Int64 = 0
        try withExtendedLifetime(arena) { try call { ctxpack_encoding_count(handle, cText, &n, $0) } }
        return n
    }

    /// The count when `text` has at most `limit` (>= 0) tokens, `nil` otherwise; counting
    /// stops once past the limit, so rejecting a huge text is cheap.
    public func count(_ text: String, limit: Int64) throws -> Int64? {
        let arena = CArena()
        let cText = arena.str(text)
        var n: Int64 = 0
        try withExtendedLifetime(arena) { try call { ctxpack_encoding_count_with_limit(handle, cText, limit, &n, $0) } }
        return n > limit ? nil : n
    }

    /// The longest prefix of `text` made of at most `maxTokens` (>= 0) of its tokens that
    /// ends on a character boundary, and its token count.
    public func truncate(_ text: String, maxTokens: Int64) throws -> Truncated {
        let bytes = Array(text.utf8)
        var length = 0
        var tokens: Int64 = 0
        try bytes.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { chars in
                let s = ctxpack_str(ptr: chars.isEmpty ? nil : chars.baseAddress, len: chars.count)
                try call { ctxpack_encoding_truncate(handle, s, maxTokens, &length, &tokens, $0) }
            }
        }
        // The cut is on a character boundary, so the prefix decodes exactly.
        return Truncated(text: String(decoding: bytes[..<length], as: UTF8.self), tokens: tokens)
    }
}

/// A prefix of a text cut on a token and character boundary (`TokenEncoding.truncate`).
public struct Truncated: Sendable, Equatable {
    public let text: String
    /// Its token count.
    public let tokens: Int64
}

/// The format of a chat request.
public enum ChatFormat: Int32, Sendable {
    /// An OpenAI Chat Completions request body.
    case openAI = 0
    /// An Anthropic Messages request body.
    case anthropic = 1
}

/// Tokens a request costs besides its texts (docs/chat.md); each >= 0.
public struct ChatOverheads: Sendable {
    public var perMessage: Int64
    public var perName: Int64
    public var perRequest: Int64
    public var media: Int64

    public init(perMessage: Int64 = 0, perName: Int64 = 0, perRequest: Int64 = 0, media: Int64 = 0) {
        self.perMessage = perMessage
        self.perName = perName
        self.perRequest = perRequest
        self.media = media
    }
}

/// Long tool outputs sent as their head and tail instead of only being dropped
/// (`ChatOptions.shorten`; docs/chat.md, "Shortening tool outputs"). Every text of a tool
/// result longer than `headTokens + tailTokens` tokens gives its message a cheaper form:
/// those texts cut to their first `headTokens` and last `tailTokens` tokens with `marker`
/// between. When the pipeline places that form, the message is sent with only those
/// strings replaced (`ChatResult.shortened` lists it).
public struct ChatShortening: Sendable {
    /// Tokens kept from the start of a long text; with `tailTokens`, both 0: no shortening.
    public var headTokens: UInt64
    /// Tokens kept from its end.
    public var tailTokens: UInt64
    /// The quality of a shortened form, in (0, 1]; 0: the share of the message's tokens the
    /// form keeps. Anything else (negative, NaN, above 1) is `Status.invalidArgument`.
    public var quality: Double
    /// Put between head and tail, `{omitted}` replaced by the number of tokens left out;
    /// `""`: `"\n[… {omitted} tokens omitted …]\n"`.
    public var marker: String

    public init(headTokens: UInt64, tailTokens: UInt64, quality: Double = 0, marker: String = "") {
        self.headTokens = headTokens
        self.tailTokens = tailTokens
        self.quality = quality
        self.marker = marker
    }
}

/// How a chat request is trimmed besides the budget and the pipeline.
public struct ChatOptions: Sendable {
    /// The encoding that counts the texts, by name; `""`: o200k_base (or the built-in
    /// estimate in a library built without the tokenizer feature).
    public var encoding: String
    /// Not `.none`: `ChatResult.selection.report` is available.
    public var trace: TraceDetail
    /// Keep the last turn (and the user message it answers) whatever the budget.
    public var pinLastTurn: Bool
    /// Instead of the provider's overheads.
    public var overheads: ChatOverheads?
    /// Not nil: keep the start of the trimmed request stable across turns
    /// (docs/prefix-cache.md); `ChatResult.reuse` and `ChatResult.state` are then set.
    public var prefix: PrefixOptions?
    /// The previous turn's `ChatResult.state` (nil on a first turn); needs `prefix`.
    public var previousState: PrefixState?
    /// Not nil: cancelling the token (from any thread) stops the trim with
    /// `Status.cancelled`, before it starts or at the run's next check. `trimChatAsync`
    /// sets one that follows the task's cancellation.
    public var cancel: CancelToken?
    /// Not nil: long tool outputs may be sent as their head and tail (`ChatShortening`).
    /// Not available with `prefix` yet (`Status.invalidArgument`).
    public var shorten: ChatShortening?

    public init(
        encoding: String = "", trace: TraceDetail = .none, pinLastTurn: Bool = true, overheads: ChatOverheads? = nil,
        prefix: PrefixOptions? = nil, previousState: PrefixState? = nil, cancel: CancelToken? = nil,
        shorten: ChatShortening? = nil
    ) {
        self.encoding = encoding
        self.trace = trace
        self.pinLastTurn = pinLastTurn
        self.overheads = overheads
        self.prefix = prefix
        self.previousState = previousState
        self.cancel = cancel
        self.shorten = shorten
    }
}

/// A unit dropped after the run to satisfy a provider rule.
public struct ChatAdjustment: Sendable {
    public let reason: String
    /// The JSON paths of the dropped messages (`"messages[0]"`).
    public let paths: [String]
}

/// A user message ctxpack pinned, beyond the system messages and the last turn, for the
/// run whose selection the result holds (docs/chat.md).
public struct ChatRulePin: Sendable {
    /// The JSON path of the pinned message (`"messages[0]"`).
    public let path: String
    /// Why it was pinned.
    public let reason: String
}

/// A trimmed chat request and how it was obtained, copied out of the library's result.
public struct ChatResult: Sendable {
    /// The trimmed request body (the request itself when everything fits).
    public let json: String
    /// Tokens of the trimmed request and of the whole request, as counted.
    public let tokens: Int64
    public let inputTokens: Int64
    /// Positions in the request's `messages` array, ascending.
    public let kept: [Int]
    public let dropped: [Int]
    /// The kept messages sent as their head and tail (`ChatOptions.shorten`): positions in
    /// the request's `messages` array, ascending, each also in `kept`; empty without the
    /// option.
    public let shortened: [Int]
    /// For each item the pipeline ran on, the JSON path it stands for (`"messages[3]"`,
    /// `"system"`, `"$"`); `selection`'s indices are positions in this list.
    public let itemPaths: [String]
    /// The units the pipeline selected that were dropped after the run to satisfy a
    /// provider rule it does not know (Anthropic's first message and thinking blocks;
    /// docs/chat.md). Usually empty.
    public let adjustments: [ChatAdjustment]
    /// The user messages ctxpack pinned, beyond the system messages and the last turn, for
    /// the run whose selection `selection` holds. When the first run's selection breaks an
    /// Anthropic ordering rule (it starts with an assistant message, or a thinking turn
    /// would merge into an earlier assistant message), ctxpack also runs the pipeline with
    /// a user message that repairs it pinned, and keeps that run when it keeps more of the
    /// first run's selection (in tokens) than dropping units (docs/chat.md, "Repairing a
    /// selection"). Empty or one pin; always empty for OpenAI requests.
    public let rulePins: [ChatRulePin]
    /// The pipeline's selection, with its report when `ChatOptions.trace` asked for one.
    public let selection: RunResult
    /// With `ChatOptions.prefix`: how much of the previous turn's trimmed request this one
    /// starts with.
    public let reuse: Reuse?
    /// With `ChatOptions.prefix`: this turn's state, for the next turn's
    /// `ChatOptions.previousState`.
    public let state: PrefixState?
}

extension Pipeline {
    /// Trims a chat request body to `budget` with this pipeline: each message becomes an
    /// item, system prompts are pinned, a tool call is kept or dropped with its results. A
    /// malformed request, or one that breaks its provider's rules, is
    /// `Status.invalidRequest` with the JSON path in the message; the pipeline's own
    /// failures keep their statuses (`Status.pinnedExceedsBudget`, ...).
    public func trimChat(
        _ request: String, format: ChatFormat, budget: Budget, options: ChatOptions = ChatOptions()
    ) throws -> ChatResult {
        let arena = CArena()
        var o = ctxpack_chat_options.sized()
        o.encoding = arena.str(options.encoding)
        o.trace_detail = options.trace.rawValue
        o.unpin_last_turn = flag(!options.pinLastTurn)
        if let overheads = options.overheads {
            o.has_overheads = 1
            o.overhead_per_message = overheads.perMessage
            o.overhead_per_name = overheads.perName
            o.overhead_per_request = overheads.perRequest
            o.overhead_media = overheads.media
        }
        let cRequest = arena.str(request)
        // The prefix options live in memory of this call; the strings they point to in `arena`.
        let prefix = UnsafeMutablePointer<ctxpack_prefix_options>.allocate(capacity: 1)
        defer { prefix.deallocate() }
        if let p = options.prefix {
            prefix.initialize(to: cPrefixOptions(p, arena))
            o.prefix = UnsafePointer(prefix)
        }
        let previous = options.previousState
        o.previous_state = previous?.handle
        o.cancel = options.cancel?.handle
        if let shorten = options.shorten {
            o.shorten_head_tokens = shorten.headTokens
            o.shorten_tail_tokens = shorten.tailTokens
            o.shorten_quality = shorten.quality
            o.shorten_marker = arena.str(shorten.marker)
        }
        let result = try withExtendedLifetime((arena, budget, previous, options.cancel)) {
            try create { ctxpack_chat_trim(format.rawValue, cRequest, budget.handle, handle, &o, $0, $1) }
        }
        defer { ctxpack_chat_result_free(result) }
        return try readChatResult(result)
    }

    /// `trimChat`, cancelled when the current task is: a cancelled task's trim throws
    /// `CtxpackError` with `Status.cancelled` (the trim itself is synchronous and keeps its
    /// thread busy until it returns or is cancelled). Replaces `options.cancel`.
    public func trimChatAsync(
        _ request: String, format: ChatFormat, budget: Budget, options: ChatOptions = ChatOptions()
    ) async throws -> ChatResult {
        let token = try CancelToken()
        var withToken = options
        withToken.cancel = token
        return try await withTaskCancellationHandler {
            try trimChat(request, format: format, budget: budget, options: withToken)
        } onCancel: {
            token.cancel()
        }
    }

    /// `trimChat` for an OpenAI Chat Completions request.
    public func trimOpenAI(_ request: String, budget: Budget, options: ChatOptions = ChatOptions()) throws -> ChatResult {
        try trimChat(request, format: .openAI, budget: budget, options: options)
    }

    /// `trimChat` for an Anthropic Messages request.
    public func trimAnthropic(_ request: String, budget: Budget, options: ChatOptions = ChatOptions()) throws -> ChatResult {
        try trimChat(request, format: .anthropic, budget: budget, options: options)
    }
}

private func readChatResult(_ r: OpaquePointer) throws -> ChatResult {
    func text(_ name: String, _ get: (UnsafeMutablePointer<ctxpack_str>) -> Int32) throws -> String {
        var s = ctxpack_str(ptr: nil, len: 0)
        try check(get(&s), nil, name)
        return string(s)
    }
    func positions(_ name: String, _ get: (UnsafeMutablePointer<UnsafePointer<Int>?>, UnsafeMutablePointer<Int>) -> Int32)
        throws -> [Int]
    {
        var ptr: UnsafePointer<Int>? = nil
        var count = 0
        try check(get(&ptr, &count), nil, name)
        return Array(UnsafeBufferPointer(start: count > 0 ? ptr : nil, count: count))
    }
    var tokens: Int64 = 0
    var inputTokens: Int64 = 0
    try check(ctxpack_chat_result_tokens(r, &tokens), nil, "ctxpack_chat_result_tokens")
    try check(ctxpack_chat_result_input_tokens(r, &inputTokens), nil, "ctxpack_chat_result_input_tokens")
    var items = 0
    try check(ctxpack_chat_result_item_count(r, &items), nil, "ctxpack_chat_result_item_count")
    let paths = try (0..<items).map { i in
        try text("ctxpack_chat_result_item_path") { ctxpack_chat_result_item_path(r, i, $0) }
    }
    var adjustmentCount = 0
    try check(ctxpack_chat_result_adjustment_count(r, &adjustmentCount), nil, "ctxpack_chat_result_adjustment_count")
    let adjustments = try (0..<adjustmentCount).map { i -> ChatAdjustment in
        var pathCount = 0
        let reason = try text("ctxpack_chat_result_adjustment") { ctxpack_chat_result_adjustment(r, i, $0, &pathCount) }
        let dropped = try (0..<pathCount).map { j in
            try text("ctxpack_chat_result_adjustment_path") { ctxpack_chat_result_adjustment_path(r, i, j, $0) }
        }
        return ChatAdjustment(reason: reason, paths: dropped)
    }
    var rulePinCount = 0
    try check(ctxpack_chat_result_rule_pin_count(r, &rulePinCount), nil, "ctxpack_chat_result_rule_pin_count")
    let rulePins = try (0..<rulePinCount).map { i -> ChatRulePin in
        var reason = ctxpack_str(ptr: nil, len: 0)
        let path = try text("ctxpack_chat_result_rule_pin") { ctxpack_chat_result_rule_pin(r, i, $0, &reason) }
        return ChatRulePin(path: path, reason: string(reason))
    }
    // A new result that may outlive the chat result (a traced selection's report keeps it).
    let selection = ResultHandle(try create { ctxpack_chat_result_selection(r, $0, $1) })
    var probe = ctxpack_prefix_reuse.sized()
    let status = ctxpack_chat_result_prefix_reuse(r, &probe, nil)
    var reuse: Reuse? = nil
    var state: PrefixState? = nil
    if status != Status.noReport.rawValue {
        try check(status, nil, "ctxpack_chat_result_prefix_reuse")
        reuse = try readReuse(
            fill: { ctxpack_chat_result_prefix_reuse(r, $0, $1) },
            json: { ctxpack_chat_result_prefix_reuse_json(r, $0, $1) })
        state = PrefixState(handle: try create { ctxpack_chat_result_prefix_state(r, $0, $1) })
    }
    return ChatResult(
        json: try text("ctxpack_chat_result_json") { ctxpack_chat_result_json(r, $0) },
        tokens: tokens, inputTokens: inputTokens,
        kept: try positions("ctxpack_chat_result_kept") { ctxpack_chat_result_kept(r, $0, $1) },
        dropped: try positions("ctxpack_chat_result_dropped") { ctxpack_chat_result_dropped(r, $0, $1) },
        shortened: try positions("ctxpack_chat_result_shortened") { ctxpack_chat_result_shortened(r, $0, $1) },
        itemPaths: paths, adjustments: adjustments, rulePins: rulePins,
        selection: try readResult(selection), reuse: reuse, state: state)
}
