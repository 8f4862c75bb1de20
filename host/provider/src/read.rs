//! Reading provider responses: every field access names the path of what
//! is missing, so a malformed response is a one-line [`ProviderError`],
//! never a panic.
//!
//! Invariant: a key whose value is `null` is absent, for every field and
//! every provider. The SDKs' default dumps keep each unset field as
//! `null` (pydantic's `model_dump`: `"toolCall": null`, `"function_call":
//! null`, `"toolUse": null`), and a response saved that way must read as
//! the provider sent it.

use serde_json::Value;

use super::{Provider, ProviderError};

/// `null`, `boolean`, `number`, `string`, `array` or `object`.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Reads a response, naming the path of whatever is missing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader {
    pub provider: Provider,
}

impl Reader {
    fn malformed(self, at: &str, expected: &'static str) -> ProviderError {
        let at = if at.is_empty() { "the response" } else { at };
        ProviderError::Malformed {
            provider: self.provider.as_str(),
            at: tiny_harness_core::display::one_line(at).into_owned(),
            expected,
        }
    }

    /// The object `value`, which lives at `at`.
    pub fn object<'v>(
        self,
        value: &'v Value,
        at: &str,
    ) -> Result<&'v serde_json::Map<String, Value>, ProviderError> {
        value
            .as_object()
            .ok_or_else(|| self.malformed(at, "an object"))
    }

    /// Field `key` of the object at `at`, which must be present.
    pub fn field<'v>(
        self,
        value: &'v Value,
        at: &str,
        key: &str,
    ) -> Result<&'v Value, ProviderError> {
        self.object(value, at)?
            .get(key)
            .filter(|v| !v.is_null())
            .ok_or_else(|| self.malformed(&join(at, key), "present"))
    }

    /// Field `key` of the object at `at`, absent or `null` as `None`.
    pub fn optional<'v>(
        self,
        value: &'v Value,
        at: &str,
        key: &str,
    ) -> Result<Option<&'v Value>, ProviderError> {
        Ok(self.object(value, at)?.get(key).filter(|v| !v.is_null()))
    }

    /// The string field `key`.
    pub fn string<'v>(
        self,
        value: &'v Value,
        at: &str,
        key: &str,
    ) -> Result<&'v str, ProviderError> {
        self.field(value, at, key)?
            .as_str()
            .ok_or_else(|| self.malformed(&join(at, key), "a string"))
    }

    /// The array field `key`, which must be present.
    pub fn array<'v>(
        self,
        value: &'v Value,
        at: &str,
        key: &str,
    ) -> Result<&'v [Value], ProviderError> {
        self.field(value, at, key)?
            .as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| self.malformed(&join(at, key), "an array"))
    }

    /// The array field `key`; absent or `null` is empty.
    pub fn optional_array<'v>(
        self,
        value: &'v Value,
        at: &str,
        key: &str,
    ) -> Result<&'v [Value], ProviderError> {
        match self.optional(value, at, key)? {
            None => Ok(&[]),
            Some(array) => array
                .as_array()
                .map(Vec::as_slice)
                .ok_or_else(|| self.malformed(&join(at, key), "an array")),
        }
    }

    /// The first element of the array field `key`, which must not be
    /// empty.
    pub fn first<'v>(
        self,
        value: &'v Value,
        at: &str,
        key: &str,
    ) -> Result<&'v Value, ProviderError> {
        self.array(value, at, key)?
            .first()
            .ok_or_else(|| self.malformed(&join(at, key), "a non-empty array"))
    }
}

/// The keys of `value` (an object) whose values are not `null`: those
/// that are there, once a dump's nulls are read as absent.
pub(crate) fn present_keys(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.as_str())
}

/// `at.key`, or `key` at the top.
pub(crate) fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// `at[index]`.
pub(crate) fn index(at: &str, index: usize) -> String {
    format!("{at}[{index}]")
}
