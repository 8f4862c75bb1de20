//! A request's `tools` payload: each offered tool's entry, as compact
//! JSON text shared with the tool's cache ([`super::cache`]), in the
//! provider's wrapper.
//!
//! Invariants:
//! - **One JSON document, however it is read.** Writing the payload as
//!   text ([`fmt::Display`], [`ToolsPayload::write_json`]) and serialising
//!   it ([`serde::Serialize`], with any serializer and formatter) give
//!   exactly what its [`Value`] ([`ToolsPayload::as_value`]) gives: the
//!   text is each entry's compact JSON joined as `serde_json` joins them,
//!   and serialising emits the same structure, the wrapper and then each
//!   entry in order.
//! - **No value is built to send it.** Encoding a request shares the
//!   entries' text and writing it copies the text; a [`Value`] is built
//!   (each entry parsed) only when something reads the payload as one,
//!   and from then on it is the payload: a change made through it is what
//!   is written.

use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::Provider;
use super::cache::Encoded;

/// How a provider wraps its list of tool entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `[entry, ...]` (OpenAI Chat and Responses, Anthropic).
    List,
    /// `{"tools": [entry, ...]}` (Bedrock's `toolConfig`, MCP's
    /// `tools/list` result).
    Tools,
    /// `[{"functionDeclarations": [entry, ...]}]` (Gemini).
    Declarations,
}

impl Shape {
    /// The compact JSON before the first entry and after the last.
    fn brackets(self) -> (&'static str, &'static str) {
        match self {
            Shape::List => ("[", "]"),
            Shape::Tools => ("{\"tools\":[", "]}"),
            Shape::Declarations => ("[{\"functionDeclarations\":[", "]}]"),
        }
    }
}

/// The provider's `tools` payload of one request (see each adapter for
/// its shape).
///
/// Send it as text: [`ToolsPayload::write_json`] or `to_string()` copy
/// each entry's compact JSON, kept with the tool since the first request
/// that offered it. Serialising it (`serde_json::to_vec(&tools)`, or as a
/// field of a `#[derive(Serialize)]` request body) gives the same bytes
/// but parses and serialises every entry again, about ten times the cost.
///
/// It also reads as the [`Value`] it stands for (it dereferences to one,
/// as the `tools` field of [`super::EncodedRequest`] was one): the value is
/// built on first such use by parsing every entry.
#[derive(Clone)]
pub struct ToolsPayload {
    shape: Shape,
    entries: Vec<Arc<Encoded>>,
    /// The whole value, once something read the payload as one.
    value: OnceLock<Value>,
}

impl ToolsPayload {
    /// `entries` (each offered tool's, in order) in `provider`'s wrapper.
    pub(super) fn new(provider: Provider, entries: Vec<Arc<Encoded>>) -> Self {
        let shape = match provider {
            Provider::OpenAiChat | Provider::OpenAiResponses | Provider::Anthropic => Shape::List,
            Provider::Bedrock | Provider::Mcp => Shape::Tools,
            Provider::Gemini => Shape::Declarations,
        };
        ToolsPayload {
            shape,
            entries,
            value: OnceLock::new(),
        }
    }

    /// Each offered tool's entry, in the order the tools were offered
    /// (this builds the value).
    pub fn entries(&self) -> Vec<&Value> {
        let value = self.as_value();
        let list = match self.shape {
            Shape::List => Some(value),
            Shape::Tools => value.get("tools"),
            Shape::Declarations => value
                .get(0)
                .and_then(|group| group.get("functionDeclarations")),
        };
        list.and_then(Value::as_array)
            .map(|entries| entries.iter().collect())
            .unwrap_or_default()
    }

    /// Writes the payload as compact JSON: the bytes
    /// `serde_json::to_writer` writes for [`ToolsPayload::as_value`].
    pub fn write_json(&self, out: &mut impl io::Write) -> io::Result<()> {
        self.pieces(|piece| out.write_all(piece.as_bytes()))
    }

    /// The payload as a [`Value`], built (once) on first use.
    pub fn as_value(&self) -> &Value {
        self.value.get_or_init(|| self.build())
    }

    /// The payload as a [`Value`] of its own.
    pub fn into_value(mut self) -> Value {
        self.value.take().unwrap_or_else(|| self.build())
    }

    /// Whether both payloads hold the very same entries (not copies).
    #[cfg(test)]
    pub(super) fn shares_entries_with(&self, other: &ToolsPayload) -> bool {
        self.entries.len() == other.entries.len()
            && (self.entries.iter())
                .zip(&other.entries)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }

    fn build(&self) -> Value {
        let entries = self.entries.iter().map(|e| e.value()).collect();
        match self.shape {
            Shape::List => Value::Array(entries),
            Shape::Tools => super::object("tools", entries),
            Shape::Declarations => {
                Value::Array(vec![super::object("functionDeclarations", entries)])
            }
        }
    }

    /// Gives `put` the compact JSON of the payload, piece by piece.
    fn pieces<E>(&self, mut put: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        if let Some(value) = self.value.get() {
            return put(&value.to_string());
        }
        let (open, close) = self.shape.brackets();
        put(open)?;
        for (i, encoded) in self.entries.iter().enumerate() {
            if i > 0 {
                put(",")?;
            }
            put(&encoded.text)?;
        }
        put(close)
    }
}

/// The shared entries as a JSON array, each parsed as it is serialised.
struct List<'a>(&'a [Arc<Encoded>]);

impl serde::Serialize for List<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for encoded in self.0 {
            seq.serialize_element(&encoded.value())?;
        }
        seq.end()
    }
}

/// `{key: [entries]}`.
struct Keyed<'a>(&'static str, List<'a>);

impl serde::Serialize for Keyed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &self.1)?;
        map.end()
    }
}

/// The structure of [`ToolsPayload::as_value`], entry by entry.
impl serde::Serialize for ToolsPayload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(value) = self.value.get() {
            return value.serialize(serializer);
        }
        let list = List(&self.entries);
        match self.shape {
            Shape::List => list.serialize(serializer),
            Shape::Tools => Keyed("tools", list).serialize(serializer),
            Shape::Declarations => {
                let mut seq = serializer.serialize_seq(Some(1))?;
                seq.serialize_element(&Keyed("functionDeclarations", list))?;
                seq.end()
            }
        }
    }
}

/// Compact JSON, as [`ToolsPayload::write_json`] writes it; with `{:#}`,
/// pretty-printed, as for a [`Value`].
impl fmt::Display for ToolsPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            let text = serde_json::to_string_pretty(self).map_err(|_| fmt::Error)?;
            return f.write_str(&text);
        }
        self.pieces(|piece| f.write_str(piece))
    }
}

/// As the [`Value`] (which this builds).
impl fmt::Debug for ToolsPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_value(), f)
    }
}

impl Deref for ToolsPayload {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.as_value()
    }
}

/// The whole value, built if it is not yet; what is changed through it is
/// what the payload then holds.
impl DerefMut for ToolsPayload {
    #[allow(clippy::expect_used, reason = "the value is set just above")]
    fn deref_mut(&mut self) -> &mut Value {
        if self.value.get().is_none() {
            self.value = OnceLock::from(self.build());
        }
        self.value.get_mut().expect("just built")
    }
}

impl PartialEq for ToolsPayload {
    fn eq(&self, other: &Self) -> bool {
        let unbuilt = self.value.get().is_none() && other.value.get().is_none();
        if unbuilt && self.shape == other.shape {
            self.entries.len() == other.entries.len()
                && (self.entries.iter())
                    .zip(&other.entries)
                    .all(|(a, b)| Arc::ptr_eq(a, b) || a.text == b.text)
        } else {
            self.as_value() == other.as_value()
        }
    }
}

impl PartialEq<Value> for ToolsPayload {
    fn eq(&self, other: &Value) -> bool {
        self.as_value() == other
    }
}

impl PartialEq<ToolsPayload> for Value {
    fn eq(&self, other: &ToolsPayload) -> bool {
        self == other.as_value()
    }
}

impl From<ToolsPayload> for Value {
    fn from(payload: ToolsPayload) -> Value {
        payload.into_value()
    }
}
