//! `--state FILE`: a prefix state carried from one run to the next (docs/prefix-cache.md).
//! The file is read when it exists and rewritten, whole, after a successful run.

use std::fmt::Write;

use ctxpack::prefix::{PrefixOptions, PrefixState, ReuseReport};

use crate::args::PrefixArgs;

/// Reads the previous state: `None` when the file does not exist yet; an error message
/// (naming the file) when it cannot be read or is not a usable state.
pub fn load(args: &PrefixArgs) -> Result<Option<PrefixState>, String> {
    match std::fs::read(&args.file) {
        Ok(bytes) => PrefixState::read(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: {e}", args.file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", args.file)),
    }
}

/// The run's prefix options from the arguments and the previous state.
pub fn options<'a>(args: &'a PrefixArgs, previous: Option<&'a PrefixState>) -> PrefixOptions<'a> {
    let mut o = PrefixOptions::new(args.mode);
    o.previous = previous;
    o.conversation = args.conversation.as_deref().map(str::as_bytes);
    o.cache = args.cache;
    if let Some(share) = args.max_value_loss {
        o.max_value_loss = share;
    }
    if let Some(w) = args.low_watermark {
        o.low_watermark = w;
    }
    o
}

/// Writes the new state (JSON when the file name ends in `.json`, the binary form
/// otherwise) next to the file and renames it over the file, so that an interrupted write
/// never leaves half a state.
pub fn save(args: &PrefixArgs, state: &PrefixState) -> Result<(), String> {
    let bytes = if args.file.ends_with(".json") {
        let mut text = state.to_json();
        text.push('\n');
        text.into_bytes()
    } else {
        state.to_bytes()
    };
    let tmp = format!("{}.tmp{}", args.file, std::process::id());
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, &args.file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: cannot write the prefix state: {e}", args.file)
        })
}

/// The lines `--explain` adds: what the run did with the previous prefix.
pub fn describe(r: &ReuseReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "prefix: {}, turn {} ({} since the anchor): {}",
        r.mode.name(),
        r.turn,
        r.turns_since_anchor,
        r.outcome.name()
    );
    let rule = match r.cache_rule {
        ctxpack::prefix::CacheRule::None => "no caching rule".to_owned(),
        other => format!("{} rule", other.name()),
    };
    let _ = writeln!(
        out,
        "kept {} of {} previous items, {} of {} tokens; cached {} tokens ({rule})",
        r.kept_entries, r.previous_entries, r.kept_tokens, r.previous_tokens, r.cached_tokens,
    );
    match &r.first_difference {
        None if r.previous_entries == 0 => {
            let _ = writeln!(out, "first difference: none (no previous window)");
        }
        None => {
            let _ = writeln!(
                out,
                "first difference: none (the previous window is the start of this one)"
            );
        }
        Some(d) => {
            let now = d.item.map_or("nothing".to_owned(), |i| format!("item {i}"));
            let _ = writeln!(
                out,
                "first difference at position {} (previously input item {}): {}; the window \
                 now has {now} there",
                d.index,
                d.previous_position,
                d.reason.name()
            );
        }
    }
    let share = 100.0 * r.value_share_given_up();
    let _ = writeln!(
        out,
        "value {:.4} of a fresh selection's {:.4} ({share:.1} % given up); anchor target {} \
         tokens",
        r.value, r.fresh_value, r.anchor_target
    );
    out
}

/// The report JSON (one object ending in `}`) with the reuse report added as its last
/// member, `"prefix"`.
pub fn add_to_report_json(report: &str, reuse: &ReuseReport) -> String {
    let body = report.trim_end();
    match body.strip_suffix('}') {
        Some(open) => format!("{open},\"prefix\":{}}}\n", reuse.to_json()),
        None => format!("{body}\n"),
    }
}
