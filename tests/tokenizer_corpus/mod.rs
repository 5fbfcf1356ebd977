//! A deterministic corpus of texts for checking token counts (tests/tokenizer.rs) and for
//! the tokenizer benchmark (benches/tokenizer.rs). Written for this project; the sample
//! sentences are ours.
#![allow(dead_code)]

/// A small xorshift generator: the corpus is the same on every run and machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Sample sentences by script.
pub const PROSE: &[(&str, &str)] = &[
    ("latin", "The quarterly report was late again, so Maria rewrote the summary herself. It's not what we'd planned, but they'll manage: 42 items shipped, 7 returned, and the rest are still in transit."),
    ("latin-accents", "Le café où nous nous sommes rencontrés a fermé l'été dernier; à côté, une boulangerie vend désormais des crêpes. Über die Brücke gehen täglich Tausende — straße, Größe, Äpfel. ¿Dónde está la estación? Ação, coração, não."),
    ("vietnamese", "Tiếng Việt có nhiều dấu thanh: sắc, huyền, hỏi, ngã, nặng. Người ta thường nói rằng học một ngôn ngữ mới mở ra một thế giới mới."),
    ("cyrillic", "Вчера вечером мы долго обсуждали новый проект. Москва, Київ, Београд — города с богатой историей. Ёжик в тумане, щука и съезд."),
    ("greek", "Η γλώσσα μας έχει μακρά ιστορία· οι φιλόσοφοι της αρχαιότητας έγραψαν έργα που διαβάζονται ακόμα. Ψυχή, ΣΟΦΙΑ, ς σ Σ."),
    ("arabic", "ذهبت إلى السوق صباح اليوم واشتريت بعض الفواكه الطازجة. اللغة العربية تُكتب من اليمين إلى اليسار، والأرقام ١٢٣ و٤٥٦ شائعة."),
    ("hebrew", "השמש זרחה מוקדם הבוקר והילדים יצאו לשחק בגן. עִבְרִית עם ניקוד, ומספרים כמו 2024 ו־17."),
    ("devanagari", "आज सुबह बारिश हुई और हम सब देर से दफ़्तर पहुँचे। हिन्दी भाषा में संयुक्ताक्षर जैसे क्ष, त्र, ज्ञ आम हैं। संख्याएँ: १२३४।"),
    ("chinese", "今天早上下了一场大雨，我们都迟到了。这个项目的目标是让模型在有限的上下文窗口中保留最重要的信息，并且能够解释每一个决定。"),
    ("japanese", "東京の天気は晴れですが、午後から雨が降るかもしれません。カタカナとひらがな、そして漢字を混ぜて書きます。ｶﾀｶﾅも。"),
    ("korean", "오늘 아침에 비가 와서 모두 늦었습니다. 한국어는 한글로 쓰며, 띄어쓰기가 중요합니다."),
    ("thai", "วันนี้ฝนตกหนักตั้งแต่เช้า พวกเราจึงไปทำงานสายกันหมด ภาษาไทยไม่เว้นวรรคระหว่างคำ"),
    ("armenian-georgian", "Բարև ձեզ, ինչպե՞ս եք։ გამარჯობა, როგორ ხარ?"),
];

pub const CODE: &[&str] = &[
    "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", xs);\n}\n",
    "def count_tokens(text: str) -> int:\n    \"\"\"Return the number of tokens.\"\"\"\n    return len(enc.encode(text))\n\n\nif __name__ == '__main__':\n    print(count_tokens('hello'))\n",
    "#include <stdio.h>\n\nint main(int argc, char **argv) {\n\tfor (int i = 0; i < argc; ++i) {\n\t\tprintf(\"%d: %s\\n\", i, argv[i]);\n\t}\n\treturn 0;\n}\n",
    "const result = await fetch(`/api/v1/items?page=${page}&limit=50`);\nif (!result.ok) throw new Error(`HTTP ${result.status}`);\nexport default { result };\n",
    "SELECT u.id, COUNT(*) AS n FROM users u JOIN orders o ON o.user_id = u.id WHERE o.created_at >= '2024-01-01' GROUP BY u.id HAVING n > 3;\n",
    "<div class=\"card\"><h2>Title</h2><p>Some <em>text</em> &amp; more.</p></div>\r\n",
    "    }\n  }\n}\n\n// TODO(alice): handle the error path\r\n/* block\n   comment */\n",
];

pub const EMOJI: &[&str] = &[
    "👍",
    "😀",
    "🦀",
    "👨‍👩‍👧‍👦",
    "👩🏽‍💻",
    "🏳️‍🌈",
    "🇫🇷",
    "🇯🇵",
    "🇺🇸🇬🇧",
    "1️⃣",
    "#️⃣",
    "❤️",
    "✌🏿",
    "🧑‍🤝‍🧑",
    "👁️‍🗨️",
    "🏴󠁧󠁢󠁳󠁣󠁴󠁿",
];

/// Characters that exercise the split patterns' classes and special cases.
pub const ATOMS: &[&str] = &[
    "a",
    "Z",
    "é",
    "É",
    "ß",
    "ǅ",
    "ʰ",
    "中",
    "ア",
    "한",
    "ก",
    "\u{301}",
    "\u{308}",
    "\u{94d}",
    "\u{e31}",
    "0",
    "7",
    "٣",
    "५",
    "Ⅻ",
    "½",
    "²",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    "\u{85}",
    "\u{b}",
    "\u{c}",
    "'",
    "'s",
    "'S",
    "'t",
    "'re",
    "'RE",
    "'ve",
    "'m",
    "'ll",
    "'LL",
    "'d",
    "'ſ",
    "ſ",
    "’",
    "/",
    "//",
    ".",
    ",",
    "!",
    "?",
    "-",
    "_",
    "(",
    ")",
    "{",
    "}",
    "\"",
    "#",
    "$",
    "%",
    "&",
    "*",
    "+",
    "<",
    ">",
    "=",
    "@",
    "\\",
    "^",
    "`",
    "|",
    "~",
    "…",
    "—",
    "«",
    "»",
    "€",
    "©",
    "™",
    "\u{0}",
    "\u{1}",
    "\u{7f}",
    "\u{80}",
    "\u{9f}",
    "\u{fffd}",
    "\u{fffe}",
    "\u{ffff}",
    "\u{feff}",
    "\u{200b}",
    "\u{200d}",
    "\u{e000}",
    "\u{d7ff}",
    "\u{10ffff}",
    "\u{1d400}",
    "𝔘",
    "😀",
    "🦀",
    "\u{fe0f}",
    "\u{1f3fd}",
    "HELLO",
    "Hello",
    "hELLO",
    "camelCase",
    "snake_case",
    "ÀÉÎ",
    "ñandú",
    "\u{5d0}\u{5b7}",
    "\u{627}\u{64b}",
    "123456",
    "3.14",
    "1,000",
];

fn words_of(text: &str) -> Vec<&str> {
    text.split(' ').filter(|w| !w.is_empty()).collect()
}

/// Prose-like text in one script: words of a sample, shuffled, with occasional breaks.
pub fn prose(rng: &mut Rng, sample: &str, words: usize) -> String {
    let pool = words_of(sample);
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push_str(match rng.below(20) {
                0 => "\n",
                1 => "\n\n",
                2 => "  ",
                _ => " ",
            });
        }
        out.push_str(rng.pick(&pool));
    }
    out
}

/// Code-like text: snippets, re-indented and interleaved.
pub fn code(rng: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    for _ in 0..lines {
        let snippet = rng.pick(CODE);
        let snippet_lines: Vec<&str> = snippet.lines().collect();
        let line = rng.pick(&snippet_lines);
        let indent = rng.below(4);
        for _ in 0..indent {
            out.push_str(if rng.below(4) == 0 { "\t" } else { "    " });
        }
        out.push_str(line);
        out.push_str(if rng.below(10) == 0 { "\r\n" } else { "\n" });
    }
    out
}

/// A random JSON value written compactly or pretty.
pub fn json(rng: &mut Rng, depth: usize) -> String {
    fn value(rng: &mut Rng, depth: usize, pretty: bool, indent: usize, out: &mut String) {
        let choice = if depth == 0 {
            rng.below(4)
        } else {
            rng.below(6)
        };
        match choice {
            0 => out.push_str(&format!("{}", rng.next() % 100_000)),
            1 => out.push_str(&format!("-{}.{}", rng.below(1000), rng.below(100))),
            2 => {
                out.push('"');
                let (_, sample) = rng.pick(PROSE);
                let words = words_of(sample);
                for i in 0..1 + rng.below(4) {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(&rng.pick(&words).replace('"', "\\\""));
                }
                out.push('"');
            }
            3 => out.push_str(rng.pick(&["true", "false", "null"])),
            4 => {
                out.push('[');
                let n = rng.below(4);
                for i in 0..n {
                    if i > 0 {
                        out.push_str(if pretty { ", " } else { "," });
                    }
                    value(rng, depth - 1, pretty, indent, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                let n = 1 + rng.below(4);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    if pretty {
                        out.push('\n');
                        out.push_str(&" ".repeat(indent + 2));
                    }
                    out.push_str(&format!(
                        "\"{}\":{}",
                        rng.pick(&[
                            "id",
                            "name",
                            "tool_call_id",
                            "content",
                            "role",
                            "args",
                            "x_1"
                        ]),
                        if pretty { " " } else { "" }
                    ));
                    value(rng, depth - 1, pretty, indent + 2, out);
                }
                if pretty {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent));
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    let pretty = rng.below(2) == 0;
    value(rng, depth, pretty, 0, &mut out);
    out
}

/// A random mixture of the atoms above and emoji.
pub fn mixture(rng: &mut Rng, atoms: usize) -> String {
    let mut out = String::new();
    for _ in 0..atoms {
        if rng.below(10) == 0 {
            out.push_str(rng.pick(EMOJI));
        } else {
            out.push_str(rng.pick(ATOMS));
        }
    }
    out
}

/// Random Unicode scalar values from the whole range, weighted towards the BMP.
pub fn random_scalars(rng: &mut Rng, chars: usize) -> String {
    let mut out = String::new();
    while out.chars().count() < chars {
        let cp = match rng.below(4) {
            0 => rng.below(0x80) as u32,
            1 => rng.below(0x800) as u32,
            2 => rng.below(0x1_0000) as u32,
            _ => rng.below(0x11_0000) as u32,
        };
        if let Some(c) = char::from_u32(cp) {
            out.push(c);
        }
    }
    out
}

/// The agreement corpus: at least 5 000 texts of every kind above, plus long runs of one
/// character (or pair) and white space mixtures. Deterministic.
pub fn corpus() -> Vec<String> {
    let mut rng = Rng::new(2024);
    let mut out = Vec::new();
    for &(_, sample) in PROSE {
        out.push(sample.to_string());
        for words in [1, 2, 3, 5, 8, 13, 40, 120] {
            for _ in 0..12 {
                out.push(prose(&mut rng, sample, words));
            }
        }
    }
    for snippet in CODE {
        out.push(snippet.to_string());
    }
    for lines in [1, 2, 5, 20, 60] {
        for _ in 0..60 {
            out.push(code(&mut rng, lines));
        }
    }
    for depth in 0..5 {
        for _ in 0..60 {
            out.push(json(&mut rng, depth));
        }
    }
    for e in EMOJI {
        out.push(e.to_string());
        out.push(format!("{e}{e}{e}"));
        out.push(format!("Nice {e}!"));
    }
    let runs = [
        "a", "A", " ", "\n", "\t", "\r\n", "0", "9", ".", "-", "=", "'", "中", "é", "\u{301}",
        "😀", "ab", " a", "a ", "\n ", " \n", "1 ", "'s", "\u{a0}", "\u{3000}", "\\", "/", "ſ",
    ];
    for run in runs {
        for n in [
            1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 64, 100, 127, 128, 129, 255, 256, 1000, 4097,
        ] {
            out.push(run.repeat(n));
        }
        out.push(format!("x{}y", run.repeat(300)));
    }
    let spaces = [
        " ", "  ", "\t", "\n", "\r", "\r\n", "\u{a0}", "\u{3000}", "\u{2028}", "\u{85}", "\u{b}",
        "\u{c}", "\u{2009}",
    ];
    let fillers = ["a", "Ab", "1", "12345", ".", "!!", "'s", "中", "\u{301}"];
    for _ in 0..800 {
        let mut s = String::new();
        for _ in 0..1 + rng.below(12) {
            if rng.below(3) == 0 {
                s.push_str(rng.pick(&fillers));
            } else {
                s.push_str(rng.pick(&spaces));
            }
        }
        out.push(s);
    }
    for len in [1, 2, 3, 5, 8, 20, 60, 200] {
        for _ in 0..180 {
            out.push(mixture(&mut rng, len));
        }
    }
    for len in [1, 3, 10, 50, 300] {
        for _ in 0..80 {
            out.push(random_scalars(&mut rng, len));
        }
    }
    out
}
