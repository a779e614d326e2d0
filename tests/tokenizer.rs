//! The tokenizer layer on the four real tokenizers (`llama3`, `qwen3`, `gptoss`, `llama2`).
//!
//! These tests need the fixtures; when one is missing they fail with the instruction to run
//! `scripts/fetch-tokenizers`. They never skip.

use std::time::Instant;

use maskforge::tokenizer::{load_tokenizer, resolve_tokenizer, VocabKind, Vocabulary, FIXTURE_NAMES};

use crate::support::fixtures::load;

fn vocab(name: &str) -> &'static Vocabulary {
    &load(name).0
}

fn id(vocab: &Vocabulary, text: &str) -> u32 {
    vocab.token_id(text).unwrap_or_else(|| panic!("no token {text:?}"))
}

const SAMPLES: &[&str] = &[
    "",
    "a",
    "abc",
    "Hello, world!",
    "  two leading spaces",
    "trailing spaces   ",
    "multiple    inner     spaces",
    " ",
    "\n",
    "line one\nline two\n\n\tindented\r\n",
    r#"{"name": "maskforge", "tags": ["a\"b", "c\\d", "\u00e9"], "n": -1.5e+10, "ok": true, "none": null}"#,
    "中文分词测试，包括标点。",
    "日本語のテキスト",
    "emoji 🦀🚀 and flags 🇫🇷 and ZWJ 👩‍💻",
    "mixed: naïve café — “quotes” ½",
    "e\u{301} (decomposed é)",
    "▁",
    "a▁b ▁ ▁▁",
    " ▁leading metaspace",
    "<|im_end|> <|eot_id|> </s> <s> <|channel|>",
    "<think>reasoning</think>",
    "\u{0}\u{1}\u{7f}",
];

#[test]
fn vocab_sizes_kinds_and_special_tokens() {
    // (name, vocab size, kind, special tokens, normal tokens with bytes)
    let expected = [
        ("llama3", 128_256, VocabKind::ByteLevel, 256, 128_000),
        ("qwen3", 151_669, VocabKind::ByteLevel, 14, 151_655),
        ("gptoss", 200_019, VocabKind::ByteLevel, 21, 199_998),
        ("llama2", 32_000, VocabKind::ByteFallback, 3, 31_997),
    ];
    for (name, size, kind, special, normal) in expected {
        let v = vocab(name);
        assert_eq!(v.vocab_size(), size, "{name}");
        assert_eq!(v.kind(), kind, "{name}");
        assert_eq!(v.special_token_ids().len(), special, "{name}");
        assert_eq!(v.sorted_token_ids().len(), normal, "{name}");
        assert!((0..size as u32).all(|i| !v.is_padding(i)), "{name} has no gaps");
        for &s in v.special_token_ids() {
            assert!(v.is_special(s) && v.token_bytes(s).is_empty(), "{name} {s}");
            assert_eq!(v.token_id(v.token_str(s).unwrap()), Some(s));
        }
    }
}

#[test]
fn stop_tokens_from_the_configs() {
    assert_eq!(vocab("llama3").stop_token_ids(), &[id(vocab("llama3"), "<|end_of_text|>")]);
    assert_eq!(vocab("llama3").stop_token_ids(), &[128_001]);
    assert_eq!(vocab("qwen3").stop_token_ids(), &[151_645]); // <|im_end|>
    assert_eq!(vocab("gptoss").stop_token_ids(), &[200_002]); // <|return|>
    assert_eq!(vocab("llama2").stop_token_ids(), &[2]); // </s>
}

#[test]
fn stop_tokens_without_a_config_and_overrides() {
    let expected: [(&str, &[u32]); 4] = [
        // <|end_of_text|> <|eot_id|>; 128008 is `<|reserved_special_token_4|>` in this (Llama 3.0)
        // file, `<|eom_id|>` only from Llama 3.1 on.
        ("llama3", &[128_001, 128_009]),
        ("qwen3", &[151_643, 151_645]),           // <|endoftext|> <|im_end|>
        ("gptoss", &[199_999, 200_002, 200_012]), // <|endoftext|> <|return|> <|call|>
        ("llama2", &[2]),
    ];
    for (name, ids) in expected {
        let files = resolve_tokenizer(name).unwrap_or_else(|e| panic!("{e}"));
        let v = Vocabulary::from_tokenizer_json_file(&files.tokenizer).unwrap();
        assert_eq!(v.stop_token_ids(), ids, "{name}");
    }
    // Llama 3.1 instruct's generation_config.json.
    let v = vocab("llama3").with_generation_config(br#"{"eos_token_id": [128001, 128008, 128009]}"#).unwrap();
    assert_eq!(v.stop_token_ids(), &[128_001, 128_008, 128_009]);
    let eot = id(&v, "<|eot_id|>");
    assert_eq!(vocab("llama3").with_stop_tokens([eot]).unwrap().stop_token_ids(), &[128_009]);
    assert!(vocab("llama3").with_stop_tokens([128_256]).is_err());
}

#[test]
fn unknown_eos_in_config_is_an_error() {
    let files = resolve_tokenizer("qwen3").unwrap_or_else(|e| panic!("{e}"));
    let json = zcat(&std::fs::read(&files.tokenizer).unwrap());
    let err = Vocabulary::from_tokenizer_json(&json, Some(br#"{"eos_token": "<|nope|>"}"#)).unwrap_err();
    assert_eq!(err.to_string(), "stop token `<|nope|>` (eos_token of tokenizer_config.json) is not in the vocabulary");
}

fn zcat(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut out).unwrap();
    out
}

#[test]
fn gpt_oss_harmony_special_tokens() {
    let v = vocab("gptoss");
    let harmony = [
        ("<|startoftext|>", 199_998),
        ("<|endoftext|>", 199_999),
        ("<|return|>", 200_002),
        ("<|constrain|>", 200_003),
        ("<|channel|>", 200_005),
        ("<|start|>", 200_006),
        ("<|end|>", 200_007),
        ("<|message|>", 200_008),
        ("<|call|>", 200_012),
    ];
    for (text, expected) in harmony {
        assert_eq!(v.token_id(text), Some(expected), "{text}");
        assert!(v.is_special(expected) && v.token_bytes(expected).is_empty(), "{text}");
        assert_eq!(v.token_text_lossy(expected), text);
    }
}

#[test]
fn llama3_and_qwen3_special_and_added_tokens() {
    let v = vocab("llama3");
    for (text, expected) in [("<|begin_of_text|>", 128_000), ("<|end_of_text|>", 128_001), ("<|eot_id|>", 128_009)] {
        assert_eq!(v.token_id(text), Some(expected));
        assert!(v.is_special(expected));
    }
    assert_eq!(v.token_bytes(id(v, "Ġthe")), b" the");
    assert_eq!(v.token_bytes(id(v, "Ċ")), b"\n");
    // Qwen3's non-special added tokens are normal tokens whose bytes are their content.
    let q = vocab("qwen3");
    for (text, expected) in
        [("<tool_call>", 151_657), ("</tool_call>", 151_658), ("<think>", 151_667), ("</think>", 151_668)]
    {
        assert_eq!(q.token_id(text), Some(expected));
        assert!(!q.is_special(expected));
        assert_eq!(q.token_bytes(expected), text.as_bytes());
    }
    assert!(q.is_special(id(q, "<|im_start|>")) && q.is_special(id(q, "<|endoftext|>")));
    // The tokenizer itself produces `<think>` for that text, and the matching encoding too.
    let (_, enc) = load("qwen3");
    assert_eq!(enc.encode("<think>").unwrap(), vec![151_667]);
    assert_eq!(enc.encode_for_matching("<think>").unwrap(), vec![151_667]);
}

#[test]
fn llama2_byte_fallback_tokens() {
    let v = vocab("llama2");
    for b in 0..=255u8 {
        let t = id(v, &format!("<0x{b:02X}>"));
        assert_eq!(t, 3 + b as u32);
        assert_eq!(v.token_bytes(t), &[b]);
    }
    assert_eq!(v.token_bytes(id(v, "▁the")), b" the");
    assert_eq!(v.token_bytes(id(v, "▁▁")), b"  ");
    assert_eq!(v.token_bytes(id(v, "▁")), b" ");
    for (text, expected) in [("<unk>", 0), ("<s>", 1), ("</s>", 2)] {
        assert_eq!(v.token_id(text), Some(expected));
        assert!(v.is_special(expected) && v.token_bytes(expected).is_empty());
    }
    // A character outside the vocabulary falls back to its UTF-8 bytes, one token each.
    let (_, enc) = load("llama2");
    let ids = enc.encode_for_matching("🦀").unwrap();
    assert_eq!(ids.iter().map(|&i| v.token_bytes(i)).collect::<Vec<_>>(), [[0xF0], [0x9F], [0xA6], [0x80]]);
}

#[test]
fn byte_level_tokens_split_utf8_characters() {
    for name in ["llama3", "qwen3", "gptoss"] {
        let v = vocab(name);
        let partial = v.sorted_token_ids().iter().filter(|&&i| std::str::from_utf8(v.token_bytes(i)).is_err()).count();
        assert!(partial > 100, "{name}: {partial} tokens hold partial UTF-8");
        // The 256 single bytes are all tokens (byte-level BPE covers every byte).
        for b in 0..=255u8 {
            let c = maskforge::tokenizer::decode::byte_level_char(b).to_string();
            assert_eq!(v.token_bytes(id(v, &c)), &[b], "{name} byte {b}");
        }
    }
}

#[test]
fn round_trip_for_matching_every_tokenizer() {
    for name in FIXTURE_NAMES {
        let (v, enc) = load(name);
        for s in SAMPLES {
            let ids = enc.encode_for_matching(s).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(v.concat_bytes(&ids), s.as_bytes(), "{name} {s:?}");
            assert!(ids.iter().all(|&i| !v.is_special(i)), "{name} {s:?}");
        }
    }
}

#[test]
fn round_trip_of_the_plain_encoding() {
    for name in FIXTURE_NAMES {
        let (v, enc) = load(name);
        assert_eq!(enc.adds_prefix_space(), name == "llama2", "{name}");
        for s in SAMPLES {
            let specials = s.contains("<|") || s.contains("</s>");
            if specials || (name == "llama2" && s.contains('▁')) || s.contains('\u{301}') {
                continue; // special tokens, metaspace and NFC are covered below
            }
            let ids = enc.encode(s).unwrap();
            let mut expected = Vec::new();
            if name == "llama2" && !s.is_empty() {
                expected.push(b' '); // SentencePiece's prefix space (`Prepend("▁")` normalizer)
            }
            expected.extend_from_slice(s.as_bytes());
            assert_eq!(v.concat_bytes(&ids), expected, "{name} {s:?}");
        }
    }
    // Llama 2: "abc" encodes as `▁abc` (" abc"); the matching encoding spells "abc".
    let (v, enc) = load("llama2");
    assert_eq!(enc.encode("abc").unwrap(), vec![id(v, "▁abc")]);
    assert_eq!(v.concat_bytes(&enc.encode_for_matching("abc").unwrap()), b"abc");
    // Llama 2 reads a literal `▁` as a space; the matching encoding uses byte tokens.
    assert_eq!(v.concat_bytes(&enc.encode("a▁b").unwrap()), b" a b");
    // Qwen3 normalizes to NFC; the matching encoding does not.
    let (v, enc) = load("qwen3");
    assert_eq!(v.concat_bytes(&enc.encode("e\u{301}").unwrap()), "é".as_bytes());
    assert_eq!(v.concat_bytes(&enc.encode_for_matching("e\u{301}").unwrap()), "e\u{301}".as_bytes());
    // Special-token strings: the plain encoding gives the special token, matching spells the text.
    assert_eq!(enc.encode("<|im_end|>").unwrap(), vec![151_645]);
    assert!(enc.encode_for_matching("<|im_end|>").unwrap().len() > 1);
}

#[test]
fn sorted_order_and_common_prefixes() {
    for name in FIXTURE_NAMES {
        let v = vocab(name);
        let sorted = v.sorted_token_ids();
        assert_eq!(sorted.len(), v.sorted_lcp().len());
        assert_eq!(v.sorted_lcp()[0], 0);
        for (w, &lcp) in sorted.windows(2).zip(&v.sorted_lcp()[1..]) {
            let (a, b) = (v.token_bytes(w[0]), v.token_bytes(w[1]));
            assert!(a < b || (a == b && w[0] < w[1]), "{name}: {} then {}", w[0], w[1]);
            assert_eq!(lcp as usize, maskforge::tokenizer::common_prefix_len(a, b));
        }
        let mut all: Vec<u32> = sorted.to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), sorted.len(), "{name}: ids are unique");
        assert!(all.iter().all(|&i| !v.is_special(i) && !v.token_bytes(i).is_empty()));
    }
    // Llama 2: `<0x41>` and `A` have the same bytes; both are listed, by id.
    let v = vocab("llama2");
    let (byte, letter) = (id(v, "<0x41>"), id(v, "A"));
    let pos = v.sorted_token_ids().iter().position(|&i| i == byte).unwrap();
    assert_eq!(v.sorted_token_ids()[pos + 1], letter);
    assert_eq!(v.sorted_lcp()[pos + 1], 1);
}

#[test]
fn padding_ids_beyond_the_tokenizer() {
    // Model embedding sizes: Qwen3 151,936; gpt-oss 201,088.
    for (name, embedding) in [("qwen3", 151_936), ("gptoss", 201_088)] {
        let mut v = vocab(name).clone();
        let tokens = v.vocab_size();
        v.set_vocab_size(embedding).unwrap();
        assert_eq!(v.vocab_size(), embedding);
        for pad in [tokens as u32, embedding as u32 - 1] {
            assert!(v.is_padding(pad) && !v.is_special(pad) && v.token_bytes(pad).is_empty(), "{name}");
            assert_eq!(v.token_str(pad), None);
        }
        assert!(!v.is_padding(embedding as u32));
        assert_eq!(v.sorted_token_ids().len(), vocab(name).sorted_token_ids().len());
        assert!(v.with_stop_tokens([tokens as u32]).is_err(), "a padding id cannot stop");
    }
}

#[test]
fn load_times_and_memory() {
    for name in FIXTURE_NAMES {
        let files = resolve_tokenizer(name).unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let v = Vocabulary::from_files(&files.tokenizer, files.config.as_deref()).unwrap();
        let vocab_time = start.elapsed();
        let start = Instant::now();
        let (_, enc) = load_tokenizer(name).unwrap();
        let both_time = start.elapsed();
        let start = Instant::now();
        enc.encode_for_matching("x").unwrap();
        let matching_time = start.elapsed();
        eprintln!(
            "{name}: Vocabulary::from_files {vocab_time:.1?}, load_tokenizer (vocabulary + TextEncoder) {both_time:.1?}, \
             first encode_for_matching {matching_time:.1?}, memory_usage {:.1} MB",
            v.memory_usage() as f64 / 1e6
        );
    }
}

/// The sorted-order copy of the token bytes and the first-byte blocks the mask walk uses agree
/// with the id-indexed table, on every real tokenizer.
#[test]
fn sorted_order_bytes_and_first_byte_blocks_agree_with_the_table() {
    for name in FIXTURE_NAMES {
        let v = vocab(name);
        let ids = v.sorted_token_ids();
        for (pos, &id) in ids.iter().enumerate() {
            assert_eq!(v.sorted_token_bytes(pos), v.token_bytes(id), "{name}: position {pos}");
        }
        assert!(v.sorted_token_bytes(ids.len()).is_empty());
        for b in 0..=255u8 {
            let range = v.sorted_first_byte_range(b, b);
            let want: Vec<usize> = (0..ids.len()).filter(|&p| v.sorted_token_bytes(p)[0] == b).collect();
            assert_eq!(range.clone().collect::<Vec<_>>(), want, "{name}: first byte {b:#04x}");
        }
        assert_eq!(v.sorted_first_byte_range(0, 255), 0..ids.len());
    }
}
