import Foundation

// Dates and durations as the library counts them: whole nanoseconds in 64 bits, since the
// Unix epoch (UTC) for dates. That covers the years 1677 to 2262; anything beyond is
// `Status.invalidArgument` rather than a wrapped or clamped number.

/// The nanoseconds since the Unix epoch of `date`, to the precision a `Date` holds (its
/// seconds are a Double: about a quarter of a microsecond today).
func nanoseconds(since1970 date: Date) throws -> Int64 {
    let seconds = date.timeIntervalSince1970
    let whole = seconds.rounded(.down)
    let fraction = seconds - whole  // exact: both are Doubles of the same binade or below
    guard whole.isFinite, whole >= -9_223_372_036, whole <= 9_223_372_036 else { throw outOfRange(date) }
    let (scaled, overflow) = Int64(whole).multipliedReportingOverflow(by: 1_000_000_000)
    let (total, overflow2) = scaled.addingReportingOverflow(Int64((fraction * 1e9).rounded()))
    guard !overflow, !overflow2 else { throw outOfRange(date) }
    return total
}

/// The date `ns` nanoseconds after the Unix epoch.
func date(nanoseconds ns: Int64) -> Date {
    let (seconds, remainder) = ns.quotientAndRemainder(dividingBy: 1_000_000_000)
    return Date(timeIntervalSince1970: Double(seconds) + Double(remainder) / 1e9)
}

private func outOfRange(_ date: Date) -> CtxpackError {
    CtxpackError(status: .invalidArgument,
                 message: "\(date) is outside what 64-bit nanoseconds since 1970 can hold (years 1677 to 2262)")
}

@available(macOS 13, iOS 16, tvOS 16, watchOS 9, *)
extension Duration {
    /// The whole nanoseconds of the duration (rounded toward zero), or
    /// `Status.invalidArgument` beyond 64 bits (about 292 years).
    func wholeNanoseconds() throws -> Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflow, !overflow2 else {
            throw CtxpackError(status: .invalidArgument, message: "\(self) does not fit in 64-bit nanoseconds")
        }
        return total
    }
}
