//! Token counts checked against two independent implementations, the encodings'
//! documented examples, and the properties of counting with a limit and truncating
//! (docs/tokenizer.md, "Correctness").
#![cfg(feature = "tokenizer")]

mod tokenizer_corpus;

use ctxpack::tokenizer::{Encoding, ENCODING_NAMES};
use ctxpack::{Error, ErrorCode};
use tokenizer_corpus::{corpus, Rng};

fn tiktoken(name: &str) -> &'static tiktoken_rs::CoreBPE {
    match name {
        "o200k_base" => tiktoken_rs::o200k_base_singleton(),
        "cl100k_base" => tiktoken_rs::cl100k_base_singleton(),
        _ => unreachable!(),
    }
}

fn bpe_openai(name: &str) -> &'static bpe_openai::Tokenizer {
    match name {
        "o200k_base" => bpe_openai::o200k_base(),
        "cl100k_base" => bpe_openai::cl100k_base(),
        _ => unreachable!(),
    }
}

fn enc(name: &str) -> &'static Encoding {
    Encoding::by_name(name).unwrap()
}

/// Token ids equal tiktoken-rs's (a port of OpenAI's tiktoken) on every text of the
/// corpus; counts equal bpe-openai's (a separate algorithm and copy of the vocabulary).
#[test]
fn corpus_agrees_with_tiktoken_rs_and_bpe_openai() {
    let texts = corpus();
    assert!(texts.len() >= 5000, "corpus has {} texts", texts.len());
    for name in ENCODING_NAMES {
        let ours = enc(name);
        let mut bpe_disagreements = Vec::new();
        for text in &texts {
            let ids = ours.encode(text);
            let reference = tiktoken(name).encode_ordinary(text);
            assert_eq!(ids, reference, "{name}: token ids differ for {text:?}");
            assert_eq!(
                ours.count(text),
                ids.len(),
                "{name}: count != encode for {text:?}"
            );
            if bpe_openai(name).count(text.as_str()) != ids.len() {
                bpe_disagreements.push(text.clone());
            }
        }
        assert!(
            bpe_disagreements.is_empty(),
            "{name}: bpe-openai counts differ on {} texts, e.g. {:?}",
            bpe_disagreements.len(),
            &bpe_disagreements[..bpe_disagreements.len().min(5)]
        );
        println!("{name}: {} texts agree", texts.len());
    }
}

/// Expected token ids published with tiktoken (its test suite) and OpenAI's cookbook.
#[test]
fn documented_examples() {
    let cl = enc("cl100k_base");
    assert_eq!(cl.encode("hello world"), [15339, 1917]);
    assert_eq!(cl.encode("rer"), [38149]);
    assert_eq!(cl.encode("'rer"), [2351, 81]);
    assert_eq!(cl.encode("today\n "), [31213, 198, 220]);
    assert_eq!(cl.encode("today\n \n"), [31213, 27907]);
    assert_eq!(cl.encode("today\n  \n"), [31213, 14211]);
    assert_eq!(cl.encode(" \u{85}0"), [220, 126, 227, 15]);
    assert_eq!(cl.encode("👍"), [9468, 239, 235]);
    assert_eq!(cl.encode(""), Vec::<u32>::new());
    assert_eq!(cl.encode("hello <|endoftext|>").len(), 7);
    // OpenAI cookbook, "How to count tokens with tiktoken" (token ids as printed there).
    assert_eq!(
        cl.encode("tiktoken is great!"),
        [83, 1609, 5963, 374, 2294, 0]
    );
    let o200k = enc("o200k_base");
    let examples: [(&str, &[u32], &[u32]); 3] = [
        (
            "antidisestablishmentarianism",
            &[519, 85342, 34500, 479, 8997, 2191],
            &[493, 129901, 376, 160388, 21203, 2367],
        ),
        (
            "2 + 2 = 4",
            &[17, 489, 220, 17, 284, 220, 19],
            &[17, 659, 220, 17, 314, 220, 19],
        ),
        (
            "お誕生日おめでとう",
            &[33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699],
            &[8930, 9697, 243, 128225, 8930, 17693, 4344, 48669],
        ),
    ];
    for (text, cl_ids, o200k_ids) in examples {
        assert_eq!(cl.encode(text), cl_ids, "{text}");
        assert_eq!(o200k.encode(text), o200k_ids, "{text}");
        assert_eq!(cl.count(text), cl_ids.len());
        assert_eq!(o200k.count(text), o200k_ids.len());
    }
    // The cookbook's chat example, whose totals the OpenAI API confirmed: 129 prompt
    // tokens for gpt-4 (cl100k_base), 124 for gpt-4o (o200k_base), counting 3 tokens per
    // message, 1 per name and 3 for the reply's priming around the encoded fields.
    let messages: [&[(&str, &str)]; 6] = [
        &[("role", "system"), ("content", "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.")],
        &[("role", "system"), ("name", "example_user"), ("content", "New synergies will help drive top-line growth.")],
        &[("role", "system"), ("name", "example_assistant"), ("content", "Things working well together will increase revenue.")],
        &[("role", "system"), ("name", "example_user"), ("content", "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.")],
        &[("role", "system"), ("name", "example_assistant"), ("content", "Let's talk later when we're less busy about how to do better.")],
        &[("role", "user"), ("content", "This late pivot means we don't have time to boil the ocean for the client deliverable.")],
    ];
    for (e, api_total) in [(cl, 129), (o200k, 124)] {
        let mut total = 3;
        for message in messages {
            total += 3;
            for (key, value) in message {
                total += e.count(value) + usize::from(*key == "name");
            }
        }
        assert_eq!(total, api_total, "{}", e.name());
    }
    assert_eq!(
        o200k.encode("hello world"),
        tiktoken("o200k_base").encode_ordinary("hello world")
    );
    // Round trip of catastrophically repetitive inputs (tiktoken's test): every byte is
    // covered exactly once.
    for name in ENCODING_NAMES {
        for c in ["^", "0", "a", "'s", " ", "\n"] {
            for text in [
                c.repeat(10_000),
                format!(" {}", c.repeat(10_000)),
                format!(" {}\n", c.repeat(10_000)),
            ] {
                let reference = tiktoken(name).encode_ordinary(&text);
                assert_eq!(enc(name).encode(&text), reference, "{name}: {c:?} x 10000");
            }
        }
    }
}

#[test]
fn names() {
    for name in ENCODING_NAMES {
        assert_eq!(enc(name).name(), name);
        assert!(std::ptr::eq(enc(name), enc(&name.to_uppercase())));
    }
    let err = Encoding::by_name("p50k_base").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    let message = err.to_string();
    assert!(
        message.contains("p50k_base") && message.contains("o200k_base, cl100k_base"),
        "{message}"
    );
    assert!(matches!(
        Encoding::by_name(""),
        Err(Error::InvalidArgument(_))
    ));
}

/// Texts for the property tests: the corpus's shorter texts, sampled.
fn property_texts() -> Vec<String> {
    corpus()
        .into_iter()
        .enumerate()
        .filter(|(i, t)| i % 3 == 0 && t.len() <= 3000)
        .map(|(_, t)| t)
        .collect()
}

#[test]
fn count_with_limit_agrees_with_count() {
    let mut rng = Rng::new(7);
    for name in ENCODING_NAMES {
        let e = enc(name);
        for text in property_texts() {
            let n = e.count(&text);
            let mut limits = vec![
                0,
                1,
                n.saturating_sub(1),
                n,
                n + 1,
                usize::MAX,
                rng.below(n + 2),
            ];
            limits.push(n / 2);
            for limit in limits {
                let expected = (n <= limit).then_some(n);
                assert_eq!(
                    e.count_with_limit(&text, limit),
                    expected,
                    "{name} limit {limit}: {text:?}"
                );
            }
        }
    }
}

/// The ends of the text's tokens (byte offsets), from tiktoken-rs.
fn token_ends(name: &str, text: &str) -> Vec<usize> {
    let mut end = 0;
    tiktoken(name)
        .encode_ordinary(text)
        .iter()
        .map(|&t| {
            end += tiktoken(name).decode_bytes(&[t]).unwrap().len();
            end
        })
        .collect()
}

#[test]
fn truncate_is_the_longest_fitting_prefix_on_token_and_char_boundaries() {
    let mut rng = Rng::new(11);
    for name in ENCODING_NAMES {
        let e = enc(name);
        for text in property_texts() {
            let ends = token_ends(name, &text);
            let n = ends.len();
            for max in [
                0,
                1,
                2,
                n / 3,
                n / 2,
                n.saturating_sub(1),
                n,
                n + 5,
                rng.below(n + 1),
            ] {
                let cut = e.truncate(&text, max);
                assert!(text.starts_with(cut.text), "not a prefix");
                assert_eq!(cut.tokens, e.count(cut.text), "{name}: reported count");
                assert!(cut.tokens <= max, "{name} max {max}: {} tokens", cut.tokens);
                if n <= max {
                    assert_eq!(cut.text, text, "{name}: a fitting text is kept whole");
                    continue;
                }
                // Maximal: the longest prefix made of the first k <= max tokens, ending on
                // a character boundary, whose own count is at most max.
                let expected = (0..=max)
                    .rev()
                    .map(|k| if k == 0 { 0 } else { ends[k - 1] })
                    .find(|&end| text.is_char_boundary(end) && e.count(&text[..end]) <= max)
                    .unwrap();
                assert_eq!(cut.text.len(), expected, "{name} max {max}: {text:?}");
            }
        }
    }
}

#[test]
fn truncate_edges() {
    for name in ENCODING_NAMES {
        let e = enc(name);
        assert_eq!(e.truncate("", 0).text, "");
        assert_eq!(e.truncate("", 5).tokens, 0);
        assert_eq!(e.truncate("hello world", 0).text, "");
        assert_eq!(e.truncate("hello world", usize::MAX).text, "hello world");
        // A character split over several tokens is never cut in half: 👍 is three tokens
        // in cl100k_base, so one or two tokens keep nothing of it.
        let cut = e.truncate("👍👍", 1);
        assert!(cut.text.is_empty() || cut.text == "👍", "{cut:?}");
    }
    let cl = enc("cl100k_base");
    assert_eq!(cl.truncate("👍", 2).text, "");
    assert_eq!(cl.truncate("👍", 3).text, "👍");
}

/// Counting with a small limit reads about as much of a huge text as fits, so rejecting a
/// megabyte-sized tool output costs about as much as counting the part that fits. Measured
/// as work, not time: the limit's answer must come from a prefix.
#[test]
fn count_with_limit_stops_early_on_huge_inputs() {
    let mut rng = Rng::new(3);
    let sample = tokenizer_corpus::PROSE[0].1;
    let huge = tokenizer_corpus::prose(&mut rng, sample, 400_000);
    for name in ENCODING_NAMES {
        let e = enc(name);
        let start = std::time::Instant::now();
        let full = e.count(&huge);
        let full_time = start.elapsed();
        let start = std::time::Instant::now();
        assert_eq!(e.count_with_limit(&huge, 1000), None);
        let limited_time = start.elapsed();
        assert!(full > 100_000);
        // A generous factor: the limited count reads ~0.5% of the text.
        assert!(
            limited_time * 20 < full_time,
            "{name}: limit 1000 took {limited_time:?}, the full count {full_time:?}"
        );
        // One huge piece (no split point) is rejected from its length alone.
        let run = "a".repeat(1 << 20);
        let start = std::time::Instant::now();
        assert_eq!(e.count_with_limit(&run, 100), None);
        assert!(start.elapsed() < full_time, "{name}: one-piece rejection");
    }
}

#[test]
fn encodings_are_shared_across_threads() {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let e = Encoding::by_name(ENCODING_NAMES[i % 2]).unwrap();
                (
                    e as *const Encoding as usize,
                    e.count("shared across threads"),
                )
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results[0].0, results[2].0);
    assert_eq!(results[1].0, results[3].0);
    assert!(results.iter().all(|r| r.1 > 0));
}
