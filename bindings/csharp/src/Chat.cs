// Token counting with the built-in encodings, and chat requests in, chat requests out
// (docs/tokenizer.md, docs/chat.md).
using System;
using System.Threading;
using System.Collections.Generic;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.InteropServices;

namespace Ctxpack
{
    /// <summary>One of the library's built-in tokenizer encodings ("o200k_base",
    /// "cl100k_base"). Owned by the library for the life of the process (nothing to dispose);
    /// may be used from many threads at once.</summary>
    public sealed class TokenEncoding
    {
        static readonly System.Text.Encoding Utf8 = new System.Text.UTF8Encoding(false, true);
        readonly IntPtr encoding;

        TokenEncoding(IntPtr encoding, string name)
        {
            this.encoding = encoding;
            Name = name;
        }

        /// <summary>The canonical name ("o200k_base").</summary>
        public string Name { get; }

        /// <summary>The encoding of that name, in any ASCII case; the first call for an
        /// encoding loads it (milliseconds). An unknown name is Status.InvalidArgument; a
        /// library built without the tokenizer feature answers Status.Unsupported.</summary>
        public static TokenEncoding Get(string name)
        {
            using (var arena = new NativeArena())
            {
                Errors.Check(Native.ctxpack_encoding_get(arena.Str(Arg.NotNull(name, nameof(name))), out var e, out var error), error);
                Errors.Check(Native.ctxpack_encoding_name(e, out var canonical));
                return new TokenEncoding(e, Native.ToManaged(canonical));
            }
        }

        /// <summary>The number of tokens of text. Special tokens such as "&lt;|endoftext|&gt;"
        /// count as ordinary text.</summary>
        public long Count(string text)
        {
            using (var arena = new NativeArena())
            {
                Errors.Check(Native.ctxpack_encoding_count(encoding, arena.Str(Arg.NotNull(text, nameof(text))), out var n, out var error), error);
                return n;
            }
        }

        /// <summary>The count when text has at most limit (&gt;= 0) tokens, null otherwise;
        /// counting stops once past the limit, so rejecting a huge text is cheap.</summary>
        public long? CountWithLimit(string text, long limit)
        {
            using (var arena = new NativeArena())
            {
                Errors.Check(Native.ctxpack_encoding_count_with_limit(encoding, arena.Str(Arg.NotNull(text, nameof(text))), limit,
                    out var n, out var error), error);
                return n > limit ? (long?)null : n;
            }
        }

        /// <summary>The longest prefix of text made of at most maxTokens (&gt;= 0) of its
        /// tokens that ends on a character boundary; tokens receives its count.</summary>
        public string Truncate(string text, long maxTokens, out long tokens)
        {
            var bytes = Utf8.GetBytes(Arg.NotNull(text, nameof(text)));
            var handle = GCHandle.Alloc(bytes, GCHandleType.Pinned);
            try
            {
                var s = new Native.Str { Ptr = handle.AddrOfPinnedObject(), Len = (UIntPtr)bytes.Length };
                if (bytes.Length == 0) s.Ptr = IntPtr.Zero;
                Errors.Check(Native.ctxpack_encoding_truncate(encoding, s, maxTokens, out var len, out tokens, out var error), error);
                // The cut is on a character boundary, so the prefix decodes exactly.
                return Utf8.GetString(bytes, 0, checked((int)len.ToUInt64()));
            }
            finally
            {
                handle.Free();
            }
        }

        /// <summary>Truncate without the count.</summary>
        public string Truncate(string text, long maxTokens) => Truncate(text, maxTokens, out _);
    }

    /// <summary>The format of a chat request.</summary>
    public enum ChatFormat
    {
        /// <summary>An OpenAI Chat Completions request body.</summary>
        OpenAi = 0,
        /// <summary>An Anthropic Messages request body.</summary>
        Anthropic = 1,
    }

    /// <summary>Tokens a request costs besides its texts (docs/chat.md); each &gt;= 0.</summary>
    public sealed class ChatOverheads
    {
        /// <summary>The framing of every message.</summary>
        public long PerMessage { get; set; }
        /// <summary>Added for a message with a "name" (OpenAI).</summary>
        public long PerName { get; set; }
        /// <summary>The priming of the reply.</summary>
        public long PerRequest { get; set; }
        /// <summary>One image, audio clip or binary document.</summary>
        public long Media { get; set; }
    }

    /// <summary>Sends a long tool output as its head and tail instead of only dropping it
    /// (docs/chat.md, "Shortening tool outputs"): every text of a tool result longer than
    /// HeadTokens and TailTokens together gives its message a cheaper form, those texts cut to
    /// their first HeadTokens and last TailTokens tokens with Marker between. When the
    /// pipeline places that form, the message is sent with only those strings replaced
    /// (ChatResult.Shortened lists it).</summary>
    public sealed class ChatShorten
    {
        /// <summary>Tokens kept from the start of a long text (&gt;= 0, a negative count is
        /// Status.InvalidArgument); HeadTokens and TailTokens both 0 turn shortening off, as a
        /// null ChatOptions.Shorten does.</summary>
        public long HeadTokens { get; set; }
        /// <summary>Tokens kept from the end of a long text (&gt;= 0); see HeadTokens.</summary>
        public long TailTokens { get; set; }
        /// <summary>The quality of a shortened form, in (0, 1]; 0 (the default): the share of
        /// the message's tokens the form keeps. Anything else (negative, NaN, above 1) is
        /// Status.InvalidArgument.</summary>
        public double Quality { get; set; }
        /// <summary>The marker put between head and tail; "{omitted}" in it is replaced by the
        /// number of tokens left out. Null or "": "\n[… {omitted} tokens omitted …]\n".</summary>
        [AllowNull, MaybeNull] public string Marker { get; set; }
    }

    /// <summary>Options of Chat.Trim; null means the defaults.</summary>
    public sealed class ChatOptions
    {
        /// <summary>The encoding that counts the texts, by name; null or "": o200k_base (or the
        /// built-in estimate in a library built without the tokenizer feature).</summary>
        [AllowNull, MaybeNull] public string Encoding { get; set; }
        /// <summary>Not None: ChatResult.Selection.Report is available.</summary>
        public TraceDetail Trace { get; set; }
        /// <summary>Keep the last turn (and the user message it answers) whatever the budget
        /// (default true).</summary>
        public bool PinLastTurn { get; set; } = true;
        /// <summary>Instead of the provider's overheads when not null.</summary>
        [AllowNull, MaybeNull] public ChatOverheads Overheads { get; set; }
        /// <summary>Not null: keep the start of the trimmed request stable across turns
        /// (docs/prefix-cache.md); ChatResult.Reuse and ChatResult.State are then set.</summary>
        [AllowNull, MaybeNull] public PrefixOptions Prefix { get; set; }
        /// <summary>The previous turn's ChatResult.State (null on a first turn); needs
        /// Prefix.</summary>
        [AllowNull, MaybeNull] public PrefixState PreviousState { get; set; }
        /// <summary>Not null: send long tool outputs as their head and tail rather than only
        /// dropping them (ChatShorten). Not available with Prefix yet
        /// (Status.InvalidArgument).</summary>
        [AllowNull, MaybeNull] public ChatShorten Shorten { get; set; }
    }

    /// <summary>A unit dropped after the run to satisfy a provider rule.</summary>
    public sealed class ChatAdjustment
    {
        /// <summary>Why.</summary>
        public string Reason { get; internal set; }
        /// <summary>The JSON paths of the dropped messages ("messages[0]").</summary>
        public IReadOnlyList<string> Paths { get; internal set; }
    }

    /// <summary>A user message ctxpack pinned, beyond the system messages and the last turn,
    /// for the run whose selection the result holds. When the first run's selection breaks
    /// an Anthropic ordering rule (it starts with an assistant message, or a thinking turn
    /// would merge into an earlier assistant message), ctxpack also runs the pipeline with
    /// a user message that repairs it pinned, and keeps that run when it keeps more of the
    /// first run's selection (in tokens) than dropping units (docs/chat.md, "Repairing a
    /// selection").</summary>
    public sealed class ChatRulePin
    {
        /// <summary>The JSON path of the pinned message ("messages[0]"); a rule pin is always
        /// one user message.</summary>
        public string Path { get; internal set; }
        /// <summary>Why.</summary>
        public string Reason { get; internal set; }
    }

    /// <summary>A trimmed chat request and how it was obtained, copied out of the library's
    /// result.</summary>
    public sealed class ChatResult
    {
        /// <summary>The trimmed request body (the request itself when everything fits).</summary>
        public string Json { get; private set; }
        /// <summary>Tokens of the trimmed request, as counted.</summary>
        public long Tokens { get; private set; }
        /// <summary>Tokens of the whole request, as counted.</summary>
        public long InputTokens { get; private set; }
        /// <summary>Positions in the request's "messages" array of the kept messages.</summary>
        public IReadOnlyList<int> Kept { get; private set; }
        /// <summary>Positions in the request's "messages" array of the dropped messages.</summary>
        public IReadOnlyList<int> Dropped { get; private set; }
        /// <summary>Positions in the request's "messages" array of the kept messages sent
        /// shortened (ChatOptions.Shorten), ascending: each is also in Kept. Empty without
        /// shortening.</summary>
        public IReadOnlyList<int> Shortened { get; private set; }
        /// <summary>For each item the pipeline ran on, the JSON path it stands for
        /// ("messages[3]", "system", "$"); Selection's indices are positions in this list.</summary>
        public IReadOnlyList<string> ItemPaths { get; private set; }
        /// <summary>Units dropped after the run (usually none).</summary>
        public IReadOnlyList<ChatAdjustment> Adjustments { get; private set; }
        /// <summary>User messages pinned for a provider rule (ChatRulePin): at most one in
        /// practice, and none for an OpenAI request.</summary>
        public IReadOnlyList<ChatRulePin> RulePins { get; private set; }
        /// <summary>The pipeline's selection, with its Report when ChatOptions.Trace asked.</summary>
        public RunResult Selection { get; private set; }
        /// <summary>With ChatOptions.Prefix: how much of the previous turn's trimmed request
        /// this one starts with; otherwise null.</summary>
        [MaybeNull] public Reuse Reuse { get; private set; }
        /// <summary>With ChatOptions.Prefix: this turn's state, for the next turn's
        /// ChatOptions.PreviousState (dispose it when done); otherwise null.</summary>
        [MaybeNull] public PrefixState State { get; private set; }

        internal static ChatResult Read(ChatResultHandle r)
        {
            var result = new ChatResult();
            Errors.Check(Native.ctxpack_chat_result_json(r, out var json));
            result.Json = Native.ToManaged(json);
            Errors.Check(Native.ctxpack_chat_result_tokens(r, out var tokens));
            Errors.Check(Native.ctxpack_chat_result_input_tokens(r, out var inputTokens));
            result.Tokens = tokens;
            result.InputTokens = inputTokens;
            Errors.Check(Native.ctxpack_chat_result_kept(r, out var kept, out var nk));
            result.Kept = Slicer.Positions(kept, nk);
            Errors.Check(Native.ctxpack_chat_result_dropped(r, out var dropped, out var nd));
            result.Dropped = Slicer.Positions(dropped, nd);
            Errors.Check(Native.ctxpack_chat_result_shortened(r, out var shortened, out var ns));
            result.Shortened = Slicer.Positions(shortened, ns);
            Errors.Check(Native.ctxpack_chat_result_item_count(r, out var items));
            var paths = new string[checked((int)items.ToUInt64())];
            for (int i = 0; i < paths.Length; i++)
            {
                Errors.Check(Native.ctxpack_chat_result_item_path(r, (UIntPtr)i, out var path));
                paths[i] = Native.ToManaged(path);
            }
            result.ItemPaths = paths;
            Errors.Check(Native.ctxpack_chat_result_adjustment_count(r, out var na));
            var adjustments = new List<ChatAdjustment>();
            for (ulong i = 0; i < na.ToUInt64(); i++)
            {
                Errors.Check(Native.ctxpack_chat_result_adjustment(r, (UIntPtr)i, out var reason, out var np));
                var adjusted = new List<string>();
                for (ulong j = 0; j < np.ToUInt64(); j++)
                {
                    Errors.Check(Native.ctxpack_chat_result_adjustment_path(r, (UIntPtr)i, (UIntPtr)j, out var path));
                    adjusted.Add(Native.ToManaged(path));
                }
                adjustments.Add(new ChatAdjustment { Reason = Native.ToManaged(reason), Paths = adjusted });
            }
            result.Adjustments = adjustments;
            Errors.Check(Native.ctxpack_chat_result_rule_pin_count(r, out var nr));
            var rulePins = new List<ChatRulePin>();
            for (ulong i = 0; i < nr.ToUInt64(); i++)
            {
                Errors.Check(Native.ctxpack_chat_result_rule_pin(r, (UIntPtr)i, out var path, out var reason));
                rulePins.Add(new ChatRulePin { Path = Native.ToManaged(path), Reason = Native.ToManaged(reason) });
            }
            result.RulePins = rulePins;
            Errors.Check(Native.ctxpack_chat_result_selection(r, out var selection, out var error), error);
            using (selection) result.Selection = RunResult.Read(selection);
            var probe = new Native.PrefixReuse();
            Native.ctxpack_prefix_reuse_init(ref probe, Native.Size<Native.PrefixReuse>());
            var status = Native.ctxpack_chat_result_prefix_reuse(r, ref probe, out error);
            if (status == (int)Status.NoReport)
            {
                Errors.Check(0, error); // frees the error
                return result;
            }
            Errors.Check(status, error);
            result.Reuse = Pipeline.ReadReuse(
                (ref Native.PrefixReuse u, out IntPtr e) => Native.ctxpack_chat_result_prefix_reuse(r, ref u, out e),
                (out StringHandle j, out IntPtr e) => Native.ctxpack_chat_result_prefix_reuse_json(r, out j, out e));
            Errors.Check(Native.ctxpack_chat_result_prefix_state(r, out var state, out error), error);
            result.State = new PrefixState(state);
            return result;
        }
    }

    /// <summary>Chat requests in, chat requests out: a request body trimmed to a budget in one
    /// call, every tool call kept or dropped with its results (docs/chat.md).</summary>
    public static class Chat
    {
        /// <summary>Trims a request body of the given format to budget with pipeline (a preset,
        /// a policy, or one built by hand). A malformed request, or one that breaks its
        /// provider's rules, is Status.InvalidRequest with the JSON path in the message; the
        /// pipeline's own failures keep their statuses (Status.PinnedExceedsBudget, ...).
        /// Thread-safe.</summary>
        public static ChatResult Trim(ChatFormat format, string request, Budget budget, Pipeline pipeline,
            [AllowNull] ChatOptions options = null) =>
            Trim(format, request, budget, pipeline, options, CancellationToken.None);

        /// <summary>Trim that stops when cancellation is cancelled: before it starts, or at the
        /// run's next check (between stages and inside long loops), with
        /// OperationCanceledException for that token.</summary>
        public static ChatResult Trim(ChatFormat format, string request, Budget budget, Pipeline pipeline,
            [AllowNull] ChatOptions options, CancellationToken cancellation)
        {
            Arg.NotNull(request, nameof(request));
            Arg.NotNull(budget, nameof(budget));
            Arg.NotNull(pipeline, nameof(pipeline));
            using (var arena = new NativeArena())
            {
                var o = new Native.ChatOptions();
                Native.ctxpack_chat_options_init(ref o, Native.Size<Native.ChatOptions>());
                if (options != null)
                {
                    o.Encoding = arena.Str(options.Encoding);
                    o.TraceDetail = (int)options.Trace;
                    o.UnpinLastTurn = options.PinLastTurn ? (byte)0 : (byte)1;
                    if (options.Overheads != null)
                    {
                        o.HasOverheads = 1;
                        o.OverheadPerMessage = options.Overheads.PerMessage;
                        o.OverheadPerName = options.Overheads.PerName;
                        o.OverheadPerRequest = options.Overheads.PerRequest;
                        o.OverheadMedia = options.Overheads.Media;
                    }
                    var shorten = options.Shorten;
                    if (shorten != null)
                    {
                        if (shorten.HeadTokens < 0 || shorten.TailTokens < 0)
                            throw new CtxpackException(Status.InvalidArgument,
                                $"Shorten.HeadTokens and Shorten.TailTokens must be >= 0 (got {shorten.HeadTokens} and {shorten.TailTokens})");
                        o.ShortenHeadTokens = (ulong)shorten.HeadTokens;
                        o.ShortenTailTokens = (ulong)shorten.TailTokens;
                        o.ShortenQuality = shorten.Quality;
                        o.ShortenMarker = arena.Str(shorten.Marker);
                    }
                }
                var text = arena.Str(request);
                if (options?.Prefix != null)
                {
                    var prefix = Pipeline.NativeOptions(options.Prefix, arena);
                    o.Prefix = arena.Alloc(Marshal.SizeOf<Native.PrefixOptions>());
                    Marshal.StructureToPtr(prefix, o.Prefix, false);
                }
                Func<IntPtr, ChatResultHandle> call = previous => Pipeline.WithCancellation(cancellation, token =>
                {
                    o.PreviousState = previous;
                    o.Cancel = token;
                    Errors.Check(Native.ctxpack_chat_trim((int)format, text, budget.Handle, pipeline.Handle, ref o,
                        out var handle, out var error), error);
                    return handle;
                });
                // The previous state stays referenced for the call.
                var previousState = options?.PreviousState;
                var result = previousState == null ? call(IntPtr.Zero) : previousState.Handle.WithPointer(call);
                using (result) return ChatResult.Read(result);
            }
        }

        /// <summary>Trim for an OpenAI Chat Completions request.</summary>
        public static ChatResult TrimOpenAi(string request, Budget budget, Pipeline pipeline, [AllowNull] ChatOptions options = null) =>
            Trim(ChatFormat.OpenAi, request, budget, pipeline, options);

        /// <summary>Cancellable trim for an OpenAI Chat Completions request.</summary>
        public static ChatResult TrimOpenAi(string request, Budget budget, Pipeline pipeline, [AllowNull] ChatOptions options,
            CancellationToken cancellation) =>
            Trim(ChatFormat.OpenAi, request, budget, pipeline, options, cancellation);

        /// <summary>Trim for an Anthropic Messages request.</summary>
        public static ChatResult TrimAnthropic(string request, Budget budget, Pipeline pipeline, [AllowNull] ChatOptions options = null) =>
            Trim(ChatFormat.Anthropic, request, budget, pipeline, options);

        /// <summary>Cancellable trim for an Anthropic Messages request.</summary>
        public static ChatResult TrimAnthropic(string request, Budget budget, Pipeline pipeline, [AllowNull] ChatOptions options,
            CancellationToken cancellation) =>
            Trim(ChatFormat.Anthropic, request, budget, pipeline, options, cancellation);
    }
}
