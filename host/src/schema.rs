//! Input schemas: compiling them once, validating arguments, pinning by hash.
//!
//! Invariants: a schema is compiled exactly once, when its tool is
//! registered, and never per call; a schema that does not compile refuses
//! its tool. Draft 2020-12 applies unless the schema's `$schema` names
//! another draft. Compilation never reaches the network or the filesystem:
//! every `$ref` outside the schema itself fails to resolve, so the schema is
//! refused rather than fetched. The hash of a schema is sha256 over its
//! RFC 8785 (JCS) canonical form, so key order and number spelling do not
//! change it.

use jsonschema::{Retrieve, Uri};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use crate::tool::Violation;

/// A compiled schema (a tool's input or output schema).
pub struct CompiledSchema {
    validator: jsonschema::Validator,
    hash: SchemaHash,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}

/// The sha256 of a schema's canonical JSON, as 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SchemaHash(String);

impl SchemaHash {
    /// Hashes `schema` in its RFC 8785 canonical form.
    pub fn of(schema: &serde_json::Value) -> Self {
        // Canonicalisation only fails for values serde_json cannot hold
        // (non-finite numbers), so the fallback is unreachable in practice;
        // it still yields a stable, distinct string rather than a panic.
        let canonical =
            serde_json_canonicalizer::to_string(schema).unwrap_or_else(|_| schema.to_string());
        SchemaHash(hex::encode(Sha256::digest(canonical.as_bytes())))
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SchemaHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a schema was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(String);

/// Refuses every external reference: schemas are self-contained here.
struct NoRemoteRefs;

impl Retrieve for NoRemoteRefs {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not allowed: schemas must be self-contained").into())
    }
}

/// The most violations reported for one call: enough to fix the call, not
/// so many that a hostile schema floods the model.
pub const MAX_VIOLATIONS: usize = 20;

impl CompiledSchema {
    /// Compiles `schema` (Draft 2020-12 unless `$schema` says otherwise).
    pub fn compile(schema: &serde_json::Value) -> Result<Self, SchemaError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SchemaError(format!(
                "a schema must be a JSON object or boolean, not {}",
                json_kind(schema)
            )));
        }
        let validator = jsonschema::options()
            .with_retriever(NoRemoteRefs)
            .build(schema)
            .map_err(|e| SchemaError(describe_schema_error(&e)))?;
        Ok(CompiledSchema {
            validator,
            hash: SchemaHash::of(schema),
        })
    }

    /// The schema's canonical hash.
    pub fn hash(&self) -> &SchemaHash {
        &self.hash
    }

    /// Checks `arguments`; on failure returns up to [`MAX_VIOLATIONS`]
    /// violations, each with its JSON pointer.
    pub fn validate(&self, arguments: &serde_json::Value) -> Result<(), Vec<Violation>> {
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(arguments)
            .take(MAX_VIOLATIONS)
            .map(|e| Violation {
                instance_path: e.instance_path().as_str().to_owned(),
                schema_path: e.schema_path().as_str().to_owned(),
                message: e.to_string(),
            })
            .collect();
        Err(violations)
    }
}

fn describe_schema_error(e: &jsonschema::ValidationError<'_>) -> String {
    let at = e.instance_path().as_str();
    if at.is_empty() {
        e.to_string()
    } else {
        format!("{e} (at schema {at})")
    }
}

/// The JSON type of a value, in words.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hash_ignores_key_order_and_number_spelling() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1.0,"a":[1e2]}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":[100],"b":1}"#).unwrap();
        assert_eq!(SchemaHash::of(&a), SchemaHash::of(&b));
        assert_ne!(
            SchemaHash::of(&a),
            SchemaHash::of(&json!({"a": [100], "b": 2}))
        );
        assert_eq!(SchemaHash::of(&a).as_str().len(), 64);
    }

    #[test]
    fn violations_carry_json_pointers() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
            "required": ["items"]
        }))
        .unwrap();
        assert!(schema.validate(&json!({"items": [1, 2]})).is_ok());
        let violations = schema.validate(&json!({"items": [1, "two"]})).unwrap_err();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].instance_path, "/items/1");
        assert!(
            violations[0].schema_path.ends_with("/type"),
            "{violations:?}"
        );
    }

    #[test]
    fn draft_2020_12_is_the_default() {
        // `prefixItems` exists only from 2020-12 on.
        let schema = CompiledSchema::compile(&json!({
            "type": "array", "prefixItems": [{"type": "string"}]
        }))
        .unwrap();
        assert!(schema.validate(&json!([1])).is_err());
        // Draft 7 ignores `prefixItems`, honouring `$schema`.
        let draft7 = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array", "prefixItems": [{"type": "string"}]
        }))
        .unwrap();
        assert!(draft7.validate(&json!([1])).is_ok());
    }

    #[test]
    fn invalid_schemas_and_remote_refs_are_refused() {
        assert!(CompiledSchema::compile(&json!({"type": 12})).is_err());
        assert!(CompiledSchema::compile(&json!("object")).is_err());
        let err = CompiledSchema::compile(&json!({"$ref": "https://example.com/schema.json"}))
            .unwrap_err();
        assert!(err.to_string().contains("not allowed"), "{err}");
    }
}
