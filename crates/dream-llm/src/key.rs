//! [`ApiKey`]: a provider credential that never shows itself.

use std::fmt;

use zeroize::Zeroizing;

use crate::error::ConfigError;

/// The environment variable holding an OpenAI key.
pub const OPENAI_API_KEY_VAR: &str = "OPENAI_API_KEY";
/// The environment variable holding an Anthropic key.
pub const ANTHROPIC_API_KEY_VAR: &str = "ANTHROPIC_API_KEY";

/// The longest key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 4096;

/// A provider API key. `Debug` and `Display` print `[redacted]`; the bytes are
/// wiped from memory when the key is dropped. A key comes only from an explicit
/// value or an explicitly named environment variable — never from a file in the
/// working directory or from model output.
#[derive(Clone)]
pub struct ApiKey(Zeroizing<String>);

impl ApiKey {
    /// A key from an explicit value. Surrounding whitespace is trimmed; the key
    /// must then be 1..=[`MAX_KEY_LEN`] visible ASCII characters (what an HTTP
    /// header can carry).
    pub fn new(value: impl Into<String>) -> Result<Self, ConfigError> {
        let value = Zeroizing::new(value.into());
        let trimmed = value.trim();
        if trimmed.is_empty() {
            return Err(ConfigError::InvalidKey("the key is empty"));
        }
        if trimmed.len() > MAX_KEY_LEN {
            return Err(ConfigError::InvalidKey("the key is too long"));
        }
        if !trimmed.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ConfigError::InvalidKey(
                "the key holds characters other than visible ASCII",
            ));
        }
        Ok(Self(Zeroizing::new(trimmed.to_owned())))
    }

    /// A key read from the environment variable `var`, when the caller asks for it.
    /// Nothing in this crate reads a key from the environment on its own.
    pub fn from_env(var: &str) -> Result<Self, ConfigError> {
        match std::env::var(var) {
            Ok(value) => Self::new(value).map_err(|e| match e {
                ConfigError::InvalidKey(why) => ConfigError::InvalidEnvKey {
                    var: var.to_owned(),
                    why,
                },
                other => other,
            }),
            Err(std::env::VarError::NotPresent) => Err(ConfigError::MissingEnv {
                var: var.to_owned(),
            }),
            Err(std::env::VarError::NotUnicode(_)) => Err(ConfigError::InvalidEnvKey {
                var: var.to_owned(),
                why: "the value is not valid Unicode",
            }),
        }
    }

    /// The secret itself, for building the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_are_redacted() {
        let key = ApiKey::new("sk-test-SECRET-1234567890").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(format!("{key}"), "[redacted]");
        assert_eq!(
            format!("{:#?}", Some(key.clone())),
            "Some(\n    ApiKey([redacted]),\n)"
        );
        assert_eq!(key.expose(), "sk-test-SECRET-1234567890");
    }

    #[test]
    fn whitespace_is_trimmed() {
        assert_eq!(ApiKey::new("  sk-abc\n").unwrap().expose(), "sk-abc");
    }

    #[test]
    fn bad_keys_are_refused_without_showing_them() {
        for bad in [
            "",
            "   ",
            "sk-abc def",
            "sk-\u{e9}t\u{e9}",
            "sk-\r\nX-Evil: 1",
        ] {
            let err = ApiKey::new(bad).unwrap_err();
            assert!(matches!(err, ConfigError::InvalidKey(_)), "{bad:?}");
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains("sk-"), "{shown}");
        }
        let long = "k".repeat(MAX_KEY_LEN + 1);
        assert!(matches!(ApiKey::new(long), Err(ConfigError::InvalidKey(_))));
    }

    #[test]
    fn a_missing_variable_is_a_clear_error() {
        let err = ApiKey::from_env("DREAM_LLM_TEST_SURELY_UNSET_VARIABLE").unwrap_err();
        assert_eq!(
            err,
            ConfigError::MissingEnv {
                var: "DREAM_LLM_TEST_SURELY_UNSET_VARIABLE".to_owned()
            }
        );
    }
}
