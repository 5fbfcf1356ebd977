//! Token counting speed next to tiktoken-rs and bpe-openai, in one process
//! (docs/tokenizer.md has the table and how to read it).
//!
//! cargo bench --bench tokenizer                 # every row
//! cargo bench --bench tokenizer -- --quick      # fewer repetitions
//! cargo bench --bench tokenizer -- --rows CJK   # only the rows whose label starts so
//! cargo bench --bench tokenizer -- --profile o200k_base CJK 20   # ctxpack alone (profiling)
//!
//! For each encoding and text (prose, code, CJK, a long run without split points, and a
//! multilingual mix) the three libraries count the same text, alternately, several times;
//! the table shows the median wall-clock time as MB/s and million tokens/s. tiktoken-rs
//! has no count function, so its row is `encode_ordinary(text).len()`. First use (load
//! time) and the memory an encoding takes are measured in fresh child processes of this
//! binary, one per library and encoding: heap bytes still allocated after loading
//! (counting allocator) and the growth of the resident set.

#[path = "../tests/tokenizer_corpus/mod.rs"]
mod tokenizer_corpus;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use ctxpack::tokenizer::Encoding;
use tokenizer_corpus::{code, prose, Rng, PROSE};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, only counting sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(p, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const LIBS: [&str; 3] = ["ctxpack", "bpe-openai", "tiktoken-rs"];
const ENCODINGS: [&str; 2] = ["o200k_base", "cl100k_base"];

/// Loads one library's encoding (its first use) and returns a counting function.
fn load(lib: &str, encoding: &str) -> Box<dyn Fn(&str) -> usize> {
    match (lib, encoding) {
        ("ctxpack", name) => {
            let e = Encoding::by_name(name).unwrap();
            Box::new(move |t| e.count(t))
        }
        ("bpe-openai", "o200k_base") => {
            let t = bpe_openai::o200k_base();
            t.count("x");
            Box::new(move |s| t.count(s))
        }
        ("bpe-openai", _) => {
            let t = bpe_openai::cl100k_base();
            t.count("x");
            Box::new(move |s| t.count(s))
        }
        ("tiktoken-rs", "o200k_base") => {
            let t = tiktoken_rs::o200k_base_singleton();
            Box::new(move |s| t.encode_ordinary(s).len())
        }
        _ => {
            let t = tiktoken_rs::cl100k_base_singleton();
            Box::new(move |s| t.encode_ordinary(s).len())
        }
    }
}

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// In a child process: load one encoding of one library, print time, heap and RSS.
fn first_use(lib: &str, encoding: &str) {
    let heap_before = LIVE.load(Ordering::Relaxed);
    let rss_before = rss_bytes();
    let start = Instant::now();
    let count = load(lib, encoding);
    black_box(count("warm"));
    let elapsed = start.elapsed();
    let heap = LIVE.load(Ordering::Relaxed) - heap_before;
    let rss = rss_bytes().saturating_sub(rss_before);
    println!("{} {} {}", elapsed.as_nanos(), heap, rss);
}

fn texts() -> Vec<(&'static str, String)> {
    let mut rng = Rng::new(99);
    let target = 1 << 20;
    let grow = |mut make: Box<dyn FnMut() -> String>| {
        let mut s = String::new();
        while s.len() < target {
            s.push_str(&make());
            s.push('\n');
        }
        s
    };
    let english = PROSE[0].1;
    let chinese = PROSE.iter().find(|p| p.0 == "chinese").unwrap().1;
    let mut r1 = Rng::new(1);
    let mut r2 = Rng::new(2);
    let mut r3 = Rng::new(3);
    let mut r4 = Rng::new(4);
    let prose_text = grow(Box::new(move || prose(&mut r1, english, 200)));
    let code_text = grow(Box::new(move || code(&mut r2, 50)));
    let cjk_text = grow(Box::new(move || prose(&mut r3, chinese, 5)));
    let mixed = grow(Box::new(move || {
        let (_, sample) = r4.pick(PROSE);
        prose(&mut r4, sample, 50)
    }));
    let run = "a".repeat(64 * 1024);
    // One piece of 64 KB that does not repeat: random lower-case letters (a word
    // without spaces), and random common Chinese characters without punctuation.
    let letters: String = (0..64 * 1024)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect();
    let hanzi: Vec<char> = chinese.chars().filter(|c| c.is_alphabetic()).collect();
    let mut hanzi_run = String::new();
    while hanzi_run.len() < 64 * 1024 {
        hanzi_run.push(hanzi[rng.below(hanzi.len())]);
    }
    vec![
        ("prose (English)", prose_text),
        ("code", code_text),
        ("CJK (Chinese)", cjk_text),
        ("multilingual", mixed),
        ("run of 'a' x 65536", run),
        ("one piece of random letters (64 KB)", letters),
        ("one piece of random Chinese characters (64 KB)", hanzi_run),
    ]
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `--profile ENCODING ROW [REPS]`: counts one text with ctxpack only, REPS times (for
/// running under a profiler or callgrind; ROW is a prefix of the row's label).
fn profile(args: &[String]) {
    let encoding = Encoding::by_name(&args[0]).unwrap();
    let texts = texts();
    let (label, text) = texts
        .iter()
        .find(|(label, _)| label.starts_with(args[1].as_str()))
        .expect("no such row");
    let reps: usize = args.get(2).map_or(1, |r| r.parse().unwrap());
    let start = Instant::now();
    let mut tokens = 0;
    for _ in 0..reps {
        tokens = encoding.count(black_box(text));
    }
    let secs = start.elapsed().as_secs_f64() / reps as f64;
    println!(
        "{} {label}: {tokens} tokens, {:.1} MB/s",
        encoding.name(),
        text.len() as f64 / secs / 1e6
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--first-use") {
        first_use(&args[i + 1], &args[i + 2]);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        profile(&args[i + 1..]);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    // `--rows PREFIX`: only the rows whose label starts with PREFIX.
    let only = args
        .iter()
        .position(|a| a == "--rows")
        .map(|i| args[i + 1].clone());
    let reps = if quick { 3 } else { 9 };

    println!("## Throughput (median of {reps} runs each, MB/s and million tokens/s)\n");
    println!("| encoding | text | tokens | ctxpack | bpe-openai | tiktoken-rs |");
    println!("|---|---|---:|---:|---:|---:|");
    let texts = texts();
    for encoding in ENCODINGS {
        let counters: Vec<_> = LIBS.iter().map(|lib| load(lib, encoding)).collect();
        for (label, text) in &texts {
            if only
                .as_ref()
                .is_some_and(|p| !label.starts_with(p.as_str()))
            {
                continue;
            }
            let tokens = counters[0](text);
            for (lib, c) in LIBS.iter().zip(&counters) {
                assert_eq!(c(text), tokens, "{lib} disagrees on {label}");
            }
            let mut times = vec![Vec::new(); LIBS.len()];
            for _ in 0..reps {
                for (i, c) in counters.iter().enumerate() {
                    let start = Instant::now();
                    black_box(c(black_box(text)));
                    times[i].push(start.elapsed());
                }
            }
            let cells: Vec<String> = times
                .into_iter()
                .map(|t| {
                    let secs = median(t).as_secs_f64();
                    format!(
                        "{:.1} MB/s, {:.2} Mtok/s",
                        text.len() as f64 / secs / 1e6,
                        tokens as f64 / secs / 1e6
                    )
                })
                .collect();
            println!(
                "| {encoding} | {label} ({:.1} MB) | {tokens} | {} |",
                text.len() as f64 / 1e6,
                cells.join(" | ")
            );
        }
    }

    if only.is_some() {
        return;
    }
    println!("\n## Limited count: rejecting the prose text with a limit of 1 000 tokens\n");
    let (_, prose_text) = &texts[0];
    for encoding in ENCODINGS {
        let e = Encoding::by_name(encoding).unwrap();
        let normalized = bpe_openai::Tokenizer::normalize(
            if encoding == "o200k_base" {
                bpe_openai::o200k_base()
            } else {
                bpe_openai::cl100k_base()
            },
            prose_text.as_str(),
        );
        let bpe = if encoding == "o200k_base" {
            bpe_openai::o200k_base()
        } else {
            bpe_openai::cl100k_base()
        };
        let mut full = Vec::new();
        let mut limited = Vec::new();
        let mut bpe_limited = Vec::new();
        for _ in 0..reps {
            let start = Instant::now();
            black_box(e.count(prose_text));
            full.push(start.elapsed());
            let start = Instant::now();
            assert_eq!(black_box(e.count_with_limit(prose_text, 1000)), None);
            limited.push(start.elapsed());
            let start = Instant::now();
            assert_eq!(black_box(bpe.count_till_limit(&normalized, 1000)), None);
            bpe_limited.push(start.elapsed());
        }
        println!(
            "- {encoding}: full count {:?}, count_with_limit(1000) {:?} (bpe-openai count_till_limit {:?})",
            median(full),
            median(limited),
            median(bpe_limited)
        );
    }

    println!("\n## First use and memory (fresh process per row)\n");
    println!("| encoding | library | first use | heap after load | RSS growth |");
    println!("|---|---|---:|---:|---:|");
    let exe = std::env::current_exe().unwrap();
    for encoding in ENCODINGS {
        for lib in LIBS {
            let mut runs = Vec::new();
            for _ in 0..3 {
                let out = std::process::Command::new(&exe)
                    .args(["--first-use", lib, encoding])
                    .output()
                    .unwrap();
                let line = String::from_utf8_lossy(&out.stdout).to_string();
                let v: Vec<u64> = line
                    .split_whitespace()
                    .map(|x| x.parse().unwrap())
                    .collect();
                runs.push(v);
            }
            runs.sort_by_key(|v| v[0]);
            let v = &runs[1];
            println!(
                "| {encoding} | {lib} | {:.1} ms | {:.1} MB | {:.1} MB |",
                v[0] as f64 / 1e6,
                v[1] as f64 / 1e6,
                v[2] as f64 / 1e6
            );
        }
    }
}
