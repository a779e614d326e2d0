//! Where tokenizer files come from: reading files (plain, or gzip with the `gzip` feature; told
//! apart by the magic bytes), model folders, and the names of the project's test tokenizers in
//! its fixtures folder ([`resolve_tokenizer`]).
//!
//! The fixtures are not in the repository (the Llama licenses forbid redistributing them with
//! it): `scripts/fetch-tokenizers` puts them into `fixtures/tokenizers/`. The fixture names are
//! a convenience of the project's own tests, benchmarks and command-line tool, hidden from the
//! documentation.

use std::path::{Path, PathBuf};

use super::{VocabError, Vocabulary};

/// The names [`resolve_tokenizer`] knows: the test tokenizers fetched by `scripts/fetch-tokenizers`.
pub const FIXTURE_NAMES: [&str; 4] = ["llama3", "qwen3", "gptoss", "llama2"];

/// The environment variable naming the fixtures folder (default: `fixtures/` of the crate root).
pub const FIXTURES_ENV: &str = "MASKFORGE_FIXTURES";

/// The files of one tokenizer, as found by [`resolve_tokenizer`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TokenizerFiles {
    /// The `tokenizer.json` (plain or gzip).
    pub tokenizer: PathBuf,
    /// Its `tokenizer_config.json`, if one was found.
    pub config: Option<PathBuf>,
}

impl TokenizerFiles {
    /// Loads the vocabulary of these files ([`Vocabulary::from_files`]).
    pub fn load_vocabulary(&self) -> Result<Vocabulary, VocabError> {
        Vocabulary::from_files(&self.tokenizer, self.config.as_deref())
    }
}

/// The fixtures folder: `$MASKFORGE_FIXTURES` if set, else `fixtures/` in the crate root.
pub fn fixtures_dir() -> PathBuf {
    match std::env::var_os(FIXTURES_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
    }
}

/// Finds a tokenizer by name or path:
///
/// * one of [`FIXTURE_NAMES`] → `<fixtures>/tokenizers/NAME.tokenizer.json.gz` and
///   `NAME.tokenizer_config.json`, where `<fixtures>` is [`fixtures_dir`]; if either is missing
///   the error says to run `scripts/fetch-tokenizers`;
/// * a file → that file, with the config next to it if there is one (`NAME.tokenizer.json[.gz]`
///   → `NAME.tokenizer_config.json`, `tokenizer.json[.gz]` → `tokenizer_config.json`);
/// * a folder (a Hugging Face model snapshot) → its `tokenizer.json` (or `tokenizer.json.gz`)
///   and `tokenizer_config.json` if present.
///
/// ```no_run
/// let files = maskforge::tokenizer::resolve_tokenizer("llama3")?;
/// let vocab = files.load_vocabulary()?;
/// assert_eq!(vocab.vocab_size(), 128_256);
/// # Ok::<(), maskforge::tokenizer::VocabError>(())
/// ```
pub fn resolve_tokenizer(name_or_path: &str) -> Result<TokenizerFiles, VocabError> {
    resolve_in(name_or_path, &fixtures_dir())
}

fn resolve_in(name_or_path: &str, fixtures: &Path) -> Result<TokenizerFiles, VocabError> {
    if FIXTURE_NAMES.contains(&name_or_path) {
        let dir = fixtures.join("tokenizers");
        let tokenizer = dir.join(format!("{name_or_path}.tokenizer.json.gz"));
        let config = dir.join(format!("{name_or_path}.tokenizer_config.json"));
        for path in [&tokenizer, &config] {
            if !path.is_file() {
                return Err(VocabError::FixtureMissing { name: name_or_path.to_string(), path: path.clone() });
            }
        }
        return Ok(TokenizerFiles { tokenizer, config: Some(config) });
    }
    let path = Path::new(name_or_path);
    if path.is_dir() {
        let plain = path.join("tokenizer.json");
        let gz = path.join("tokenizer.json.gz");
        let tokenizer = if !plain.is_file() && gz.is_file() { gz } else { plain };
        let config = Some(path.join("tokenizer_config.json")).filter(|c| c.is_file());
        return Ok(TokenizerFiles { tokenizer, config });
    }
    if path.is_file() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let stem = name.strip_suffix(".gz").unwrap_or(name);
        let config_name = match stem.strip_suffix("tokenizer.json") {
            Some(prefix) => format!("{prefix}tokenizer_config.json"),
            None => String::new(),
        };
        let config = Some(path.with_file_name(config_name)).filter(|c| !stem.is_empty() && c.is_file());
        return Ok(TokenizerFiles { tokenizer: path.to_path_buf(), config });
    }
    Err(VocabError::UnknownTokenizer { name: name_or_path.to_string(), known: "llama3, qwen3, gptoss, llama2" })
}

/// Reads a file, decompressing it if it starts with the gzip magic bytes.
pub(crate) fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>, VocabError> {
    let data = std::fs::read(path).map_err(|source| VocabError::Io { path: path.to_path_buf(), source })?;
    maybe_gunzip(data, || format!("`{}`", path.display()))
}

/// Decompresses `data` if it starts with the gzip magic bytes `1f 8b`; returns it unchanged
/// otherwise. Without the `gzip` feature, gzip data is a [`VocabError::GzipDisabled`].
pub(crate) fn maybe_gunzip(data: Vec<u8>, origin: impl FnOnce() -> String) -> Result<Vec<u8>, VocabError> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Ok(data);
    }
    gunzip(&data, origin)
}

#[cfg(feature = "gzip")]
fn gunzip(data: &[u8], origin: impl FnOnce() -> String) -> Result<Vec<u8>, VocabError> {
    use std::io::Read;
    // The trailer holds the uncompressed size mod 2^32: a capacity hint, bounded against lies.
    let hint = match data.len().checked_sub(4).map(|at| &data[at..]) {
        Some(&[a, b, c, d]) => (u32::from_le_bytes([a, b, c, d]) as usize).min(data.len().saturating_mul(32)),
        _ => 0,
    };
    let mut out = Vec::with_capacity(hint);
    flate2::read::MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(|source| VocabError::Gzip { origin: origin(), source })?;
    Ok(out)
}

#[cfg(not(feature = "gzip"))]
fn gunzip(_: &[u8], origin: impl FnOnce() -> String) -> Result<Vec<u8>, VocabError> {
    Err(VocabError::GzipDisabled { origin: origin() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "gzip")]
    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    #[cfg(feature = "gzip")]
    fn gzip_is_detected_by_magic_bytes() {
        let json = br#"{"model": {"vocab": {"a": 0}}}"#.to_vec();
        assert_eq!(maybe_gunzip(json.clone(), String::new).unwrap(), json);
        assert_eq!(maybe_gunzip(gzip(&json), String::new).unwrap(), json);
        let mut broken = gzip(&json);
        broken.truncate(broken.len() / 2);
        let err = maybe_gunzip(broken, || "`x.gz`".into()).unwrap_err().to_string();
        assert!(err.starts_with("cannot decompress the gzip data of `x.gz`: "), "{err}");
    }

    #[test]
    fn io_errors_name_the_path() {
        let err = Vocabulary::from_tokenizer_json_file("/nonexistent/tok.json").unwrap_err().to_string();
        assert!(err.starts_with("cannot read `/nonexistent/tok.json`: "), "{err}");
        let err = resolve_tokenizer("/nonexistent/tok.json").unwrap_err().to_string();
        assert_eq!(
            err,
            "no tokenizer `/nonexistent/tok.json`: not an existing file or folder, and not one of the fixture names llama3, qwen3, gptoss, llama2"
        );
    }

    #[test]
    fn missing_fixtures_say_how_to_fetch() {
        let err = resolve_in("llama3", Path::new("/nonexistent")).unwrap_err().to_string();
        assert_eq!(
            err,
            "tokenizer fixture `llama3` not found at `/nonexistent/tokenizers/llama3.tokenizer.json.gz`: run \
             scripts/fetch-tokenizers (from the repository root) to fetch the test tokenizers, or point \
             MASKFORGE_FIXTURES at a folder holding tokenizers/llama3.tokenizer.json.gz"
        );
    }

    #[test]
    fn files_and_folders_resolve_with_sibling_configs() {
        let dir = std::env::temp_dir().join(format!("maskforge-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tok = dir.join("qwen3.tokenizer.json.gz");
        let config = dir.join("qwen3.tokenizer_config.json");
        let notice = dir.join("NOTICE");
        for file in [&tok, &config, &notice] {
            std::fs::write(file, b"{}").unwrap();
        }
        let files = resolve_tokenizer(tok.to_str().unwrap()).unwrap();
        assert_eq!(files, TokenizerFiles { tokenizer: tok.clone(), config: Some(config) });
        assert_eq!(resolve_tokenizer(notice.to_str().unwrap()).unwrap().config, None);
        let files = resolve_tokenizer(dir.to_str().unwrap()).unwrap();
        assert_eq!(files, TokenizerFiles { tokenizer: dir.join("tokenizer.json"), config: None });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // The crate's own tests build it with `gzip` (its fixtures are gzip files), so the error of a
    // build without the feature is checked as a value.
    #[test]
    fn gzip_without_the_feature_names_it() {
        let err = VocabError::GzipDisabled { origin: "`x.gz`".into() }.to_string();
        assert!(
            err.starts_with(
                "`x.gz` is gzip-compressed: decompress it first, or build maskforge with its `gzip` feature"
            ),
            "{err}"
        );
    }
}
