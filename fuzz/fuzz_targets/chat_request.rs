//! `chat_request`: arbitrary bytes as an OpenAI or Anthropic request body.
//!
//! The bytes are decoded lossily; a hash of them picks the provider, the budget (zero,
//! small, half or all of the request's tokens as counted, or huge) and whether the last
//! turn is pinned and whether long tool outputs are shortened. `ctxpack::chat::trim` must
//! never panic; when it succeeds, the output must be a request it accepts again unchanged
//! under a budget that holds everything, counted at the tokens the trim reported, whose
//! messages are an ascending subsequence of the input's (the shortened ones among the
//! kept), within the budget.
#![no_main]

use ctxpack::chat::{trim, ChatOptions, Provider};
use ctxpack::model::HeadTail;
use ctxpack::policy::Policy;
use ctxpack::ContextBudget;
use ctxpack_fuzz::fnv1a;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let hash = fnv1a(data);
    let provider = if hash % 2 == 0 {
        Provider::OpenAi
    } else {
        Provider::Anthropic
    };
    let pipeline = Policy::preset("chat")
        .and_then(|p| p.build_pipeline())
        .expect("the chat preset builds");
    let huge = ContextBudget::new(i64::MAX / 4, i64::MAX / 4).expect("valid");
    let mut options = ChatOptions::default();
    let Ok(whole) = trim(provider, &text, &huge, &pipeline, &options) else {
        return;
    };
    assert_eq!(whole.json, text, "everything fits: the request comes back unchanged");
    let target = match (hash >> 8) % 5 {
        0 => 0,
        1 => (hash >> 16) as i64 & 0xff,
        2 => whole.input_tokens / 2,
        3 => whole.input_tokens,
        _ => i64::MAX / 4,
    };
    options.pin_last_turn = (hash >> 12) % 3 != 0;
    let spec = HeadTail::new(((hash >> 20) % 6) as usize, ((hash >> 24) % 4) as usize);
    if (hash >> 28) % 2 == 0 {
        options.shorten = spec.as_ref().ok();
    }
    let budget = ContextBudget::new(target, target).expect("valid");
    let Ok(t) = trim(provider, &text, &budget, &pipeline, &options) else {
        return;
    };
    assert!(t.tokens <= target);
    assert_eq!(t.input_tokens, whole.input_tokens, "the input is counted whole");
    assert!(t.kept.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(t.kept.len() + t.dropped.len(), whole.kept.len());
    assert!(t.shortened.iter().all(|i| t.kept.binary_search(i).is_ok()));
    assert!(options.shorten.is_some() || t.shortened.is_empty());
    let again = trim(provider, &t.json, &huge, &pipeline, &options).expect("the output is valid");
    assert_eq!(again.json, t.json);
    assert_eq!(again.input_tokens, t.tokens, "the output counts what the trim reported");
});
