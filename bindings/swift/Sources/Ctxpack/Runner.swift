import CCtxpack
import Foundation

/// Runs pipelines over items into one library result that it keeps between runs (the
/// library's `ctxpack_pipeline_run_descs_into`): once that result has grown to a run's
/// size, the library allocates nothing for the run (docs/ffi.md, "Reusing a result").
/// Each `run` returns its `RunResult` copied out, as `Pipeline.runOnce` does, so a result
/// stays valid after later runs. A traced run's report reads its result lazily, so after
/// a traced run the Runner leaves that result to the report and makes a new one next
/// time. Keep one Runner per thread or task; calls on one Runner are serialised.
public final class Runner: @unchecked Sendable {
    // @unchecked: `kept` is only touched with `lock` held.
    private let lock = NSLock()
    /// The kept result; nil before the first successful run and after a traced one.
    private var kept: ResultHandle?

    public init() {}

    /// `pipeline.runOnce(items, budget:, trace:)`, run into the kept result.
    public func run(_ pipeline: Pipeline, _ items: [Item], budget: Budget, trace: TraceDetail = .none) throws
        -> RunResult
    {
        lock.lock()
        defer { lock.unlock() }
        let arena = CArena()
        let descs = try batchDescriptors(items, in: arena)
        var options = ctxpack_run_options.sized()
        options.trace_detail = trace.rawValue
        let earlier = kept?.raw
        var result = earlier
        try withExtendedLifetime((arena, pipeline, budget, kept)) {
            try call { error in
                descs.withUnsafeBufferPointer { d in
                    ctxpack_pipeline_run_descs_into(
                        pipeline.handle, d.baseAddress, d.count, budget.handle, &options, &result, error)
                }
            }
        }
        guard let result else { throw CtxpackError(status: .nullArgument, message: "no result returned") }
        let handle: ResultHandle
        if let kept, result == earlier {
            handle = kept
        } else {
            // A new result: the library released the earlier one, so its handle must not.
            kept?.disown()
            handle = ResultHandle(result)
        }
        let out = try readResult(handle)
        kept = out.report == nil ? handle : nil
        return out
    }
}
