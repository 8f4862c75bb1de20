//! What a tool function returns, and how it becomes the call's result or
//! error.
//!
//! A tool returns `Result<T, E>`: `T` is a [`String`] (one text part), a
//! [`Json`] (one JSON part, and the tool's output schema) or an
//! [`Output`] (parts in any order); `E` is anything that converts into a
//! [`ToolError`], which says whether the model sees an error result or the
//! call fails with one of the WIT `call-error` cases.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::tiny_harness::plugin::types::{ContentPart, JsonData};
use crate::bindings::{CallError, CallResult};

/// Why a tool did not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// A failure the model should see and may act on (a missing file, a
    /// program that exited non-zero): an ordinary result marked as an
    /// error, holding this text.
    Reported(String),
    /// The arguments passed the schema but cannot be used (a value out of
    /// range, say): `invalid-arguments`.
    InvalidArguments(String),
    /// The plugin's policy or the host refused (a path outside every
    /// grant): `denied`.
    Denied(String),
    /// Anything else: `failed`.
    Failed(String),
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::Reported(m)
            | ToolError::InvalidArguments(m)
            | ToolError::Denied(m)
            | ToolError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ToolError {}

/// `?` on a file or a directory of a grant: a path that is not there (or
/// is there already, or is not what the call expects) is a result the
/// model sees and can act on; a refusal by the host is `denied`; anything
/// else fails the call. The message is the error's, as std words it.
impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> ToolError {
        use std::io::ErrorKind;
        let message = err.to_string();
        match err.kind() {
            ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
                ToolError::Denied(message)
            }
            ErrorKind::NotFound
            | ErrorKind::AlreadyExists
            | ErrorKind::IsADirectory
            | ErrorKind::NotADirectory
            | ErrorKind::DirectoryNotEmpty
            | ErrorKind::InvalidInput
            | ErrorKind::InvalidData
            | ErrorKind::InvalidFilename
            | ErrorKind::FileTooLarge => ToolError::Reported(message),
            _ => ToolError::Failed(message),
        }
    }
}

/// `?` on JSON the tool reads or writes: the call fails, saying where the
/// JSON went wrong.
impl From<serde_json::Error> for ToolError {
    fn from(err: serde_json::Error) -> ToolError {
        ToolError::Failed(format!("JSON: {err}"))
    }
}

impl ToolError {
    /// The call's answer for this error.
    fn into_call(self) -> Result<CallResult, CallError> {
        match self {
            ToolError::Reported(text) => Ok(CallResult {
                content: vec![ContentPart::Text(text)],
                is_error: true,
            }),
            ToolError::InvalidArguments(m) => Err(CallError::InvalidArguments(m)),
            ToolError::Denied(m) => Err(CallError::Denied(m)),
            ToolError::Failed(m) => Err(CallError::Failed(m)),
        }
    }
}

/// JSON data a tool returns: one `application/json` part, and the tool's
/// output schema derived from `T` (the host checks every result against
/// it).
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

/// A result of several parts, or one marked as an error: the general form
/// a tool may return. It declares no output schema.
#[derive(Debug, Clone, Default)]
pub struct Output {
    parts: Vec<ContentPart>,
    is_error: bool,
}

impl Output {
    /// An empty result.
    pub fn new() -> Output {
        Output::default()
    }

    /// Adds a text part.
    pub fn text(mut self, text: impl Into<String>) -> Output {
        self.parts.push(ContentPart::Text(text.into()));
        self
    }

    /// Adds a JSON part of `value`, as `application/json`.
    pub fn json<T: Serialize>(self, value: &T) -> Result<Output, ToolError> {
        self.json_as("application/json", value)
    }

    /// Adds a JSON part of `value` with `media_type`
    /// (`application/geo+json`).
    pub fn json_as<T: Serialize>(
        mut self,
        media_type: &str,
        value: &T,
    ) -> Result<Output, ToolError> {
        let data = serde_json::to_string(value)
            .map_err(|err| ToolError::Failed(format!("cannot write the result as JSON: {err}")))?;
        self.parts.push(ContentPart::Json(JsonData {
            media_type: media_type.to_owned(),
            data,
        }));
        Ok(self)
    }

    /// Marks the result as an error the model should see.
    pub fn error(mut self) -> Output {
        self.is_error = true;
        self
    }
}

/// What a tool function may return; implemented for `Result<T, E>` with
/// `T` a [`String`], [`Json`] or [`Output`] and `E: Into<ToolError>`.
pub trait Returns {
    /// The tool's output schema, if it declares one.
    fn output_schema() -> Option<serde_json::Value>;
    /// The call's answer.
    fn into_call(self) -> Result<CallResult, CallError>;
}

/// A successful value a tool returns.
pub trait Success {
    /// Its output schema, if it declares one.
    fn output_schema() -> Option<serde_json::Value>;
    /// The call's result.
    fn into_result(self) -> Result<CallResult, ToolError>;
}

impl Success for String {
    fn output_schema() -> Option<serde_json::Value> {
        None
    }

    fn into_result(self) -> Result<CallResult, ToolError> {
        Ok(CallResult {
            content: vec![ContentPart::Text(self)],
            is_error: false,
        })
    }
}

impl<T: Serialize + JsonSchema> Success for Json<T> {
    fn output_schema() -> Option<serde_json::Value> {
        Some(crate::schema::output::<T>())
    }

    fn into_result(self) -> Result<CallResult, ToolError> {
        Output::new().json(&self.0)?.into_result()
    }
}

impl Success for Output {
    fn output_schema() -> Option<serde_json::Value> {
        None
    }

    fn into_result(self) -> Result<CallResult, ToolError> {
        Ok(CallResult {
            content: self.parts,
            is_error: self.is_error,
        })
    }
}

impl<T: Success, E: Into<ToolError>> Returns for Result<T, E> {
    fn output_schema() -> Option<serde_json::Value> {
        T::output_schema()
    }

    fn into_call(self) -> Result<CallResult, CallError> {
        match self.map_err(Into::into).and_then(Success::into_result) {
            Ok(result) => Ok(result),
            Err(err) => err.into_call(),
        }
    }
}

/// Runs a tool: `arguments` into `A` (or `invalid-arguments` with serde's
/// message), then `f`, then its answer.
pub fn run<A: DeserializeOwned, R: Returns>(
    arguments: &str,
    f: impl FnOnce(A) -> R,
) -> Result<CallResult, CallError> {
    let args: A = serde_json::from_str(arguments)
        .map_err(|err| CallError::InvalidArguments(format!("invalid arguments: {err}")))?;
    f(args).into_call()
}
