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
//!
//! Schemas come from untrusted plugins and servers, so no schema may make a
//! validation cost unbounded host CPU: every regex runs on the linear-time
//! `regex` engine with bounded automata (a pattern it cannot compile, such
//! as a look-around or backreference, refuses the schema), and a schema's
//! static evaluation cost (`cost`) must be within the caller's budget
//! before it compiles. Validating a value `v` then takes at most
//! `cost() * instance_units(v)` units of work.

use jsonschema::{PatternOptions, Retrieve, Uri};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use crate::tool::Violation;

mod cost;

pub use cost::{
    Bounds, CostError, MAX_EVALUATION_DEPTH, MAX_INSTANCE_DEPTH, REGEX_DFA_SIZE_LIMIT,
    REGEX_SIZE_LIMIT, evaluation_bounds, evaluation_cost, instance_depth, instance_units,
    regex_weight,
};

/// The default ceiling on a schema's evaluation cost ([`CompiledSchema::cost`]),
/// in units of work per unit of instance size.
///
/// Calibrated on real tool schemas (the host's own plugins, GitHub's,
/// Notion's and Playwright's MCP servers, Pydantic models with
/// discriminated unions): the costliest of them stays below 1/20 of it, so a
/// real tool does not meet it; while a call's validation, bounded by
/// `cost * instance_units(arguments)`, stays small for arguments of the
/// sizes models send.
pub const DEFAULT_SCHEMA_COST: u64 = 20_000;

/// The longest string a `format: "regex"` check accepts. jsonschema's ECMA
/// regex syntax check is quadratic in the named groups of the string it
/// checks (an argument), so longer strings are refused rather than parsed.
pub const MAX_FORMAT_REGEX_LEN: usize = 1024;

/// A compiled schema (a tool's input or output schema).
pub struct CompiledSchema {
    validator: jsonschema::Validator,
    hash: SchemaHash,
    bounds: Bounds,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("hash", &self.hash)
            .field("cost", &self.cost())
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

    /// A digest computed elsewhere (64 lowercase hex digits), such as a
    /// definition's pin hash.
    pub(crate) fn from_digest(hex: String) -> Self {
        SchemaHash(hex)
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
#[non_exhaustive]
pub enum SchemaError {
    /// Not a valid schema here: malformed, an external or unresolvable
    /// reference, an in-place reference cycle, a regex the linear engine
    /// cannot compile.
    #[error("{reason}")]
    Invalid {
        /// Why, on one line.
        reason: String,
    },
    /// Valid, but validating one value may cost more than the limit (raise
    /// the limit to accept it).
    #[error("too costly to validate: {reason} (the schema cost limit is {limit})")]
    TooCostly {
        /// The limit it exceeds.
        limit: u64,
        /// The cost computed before it was refused (a lower bound).
        cost: u64,
        /// Where and how it fans out, on one line.
        reason: String,
    },
}

impl SchemaError {
    fn invalid(reason: impl Into<String>) -> Self {
        SchemaError::Invalid {
            reason: reason.into(),
        }
    }
}

impl From<CostError> for SchemaError {
    fn from(error: CostError) -> Self {
        match error {
            CostError::OverBudget { bound, budget, .. } => SchemaError::TooCostly {
                limit: budget,
                cost: bound,
                reason: error.to_string(),
            },
            other => SchemaError::invalid(other.to_string()),
        }
    }
}

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

/// The most work one validation may take: a schema's evaluation cost times
/// the size of the value checked, in [`instance_units`]. A value whose
/// product is larger is not validated ([`CompiledSchema::admit`]), so that
/// no call, and no schema a source chose, can make validation run for long.
/// At about 1 ns per unit when a value matches (measured in a release
/// build), this admits, say, 1 MB of file content for a tool of cost 8.
pub const VALIDATION_BUDGET: u64 = 10_000_000;

/// Why a value is not validated against a schema at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inadmissible {
    /// Larger than [`VALIDATION_BUDGET`] allows for this schema's cost.
    TooLarge {
        /// The most units a value may have for this schema.
        most_units: u64,
    },
    /// Nested so deep that the validator would recurse past
    /// [`MAX_EVALUATION_DEPTH`] subschemas.
    TooDeep {
        /// How deep the value nests.
        levels: usize,
        /// The deepest nesting this schema can check.
        most_levels: usize,
    },
}

/// The most work spent explaining why a value fails its schema: the cost
/// times the depth of nesting times the number of values. Measured in a
/// release build at about 8 ns per unit on the worst case (a `$ref`
/// fan-out at the cost limit), so at most about 80 ms.
pub const ERROR_DETAIL_BUDGET: u64 = 10_000_000;

/// How many JSON values `value` holds, counted up to a little past
/// `stop_after`. Iterative.
fn value_count(value: &serde_json::Value, stop_after: u64) -> u64 {
    let mut count = 0u64;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        count += 1;
        if count > stop_after {
            break;
        }
        match value {
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(members) => stack.extend(members.values()),
            _ => {}
        }
    }
    count
}

/// The most violations reported for one call: enough to fix the call, not
/// so many that a hostile schema floods the model.
pub const MAX_VIOLATIONS: usize = 20;

impl CompiledSchema {
    /// Compiles `schema` (Draft 2020-12 unless `$schema` says otherwise),
    /// refusing it when its evaluation cost exceeds `max_cost` (see
    /// [`evaluation_cost`]); the cost is computed first, so a costly schema
    /// never reaches the validator build.
    pub fn compile(schema: &serde_json::Value, max_cost: u64) -> Result<Self, SchemaError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(SchemaError::invalid(format!(
                "a schema must be a JSON object or boolean, not {}",
                json_kind(schema)
            )));
        }
        let bounds = evaluation_bounds(schema, max_cost)?;
        let validator = jsonschema::options()
            .with_retriever(NoRemoteRefs)
            .with_pattern_options(
                PatternOptions::regex()
                    .size_limit(REGEX_SIZE_LIMIT)
                    .dfa_size_limit(REGEX_DFA_SIZE_LIMIT),
            )
            .with_format("regex", |text: &str| {
                text.len() <= MAX_FORMAT_REGEX_LEN && jsonschema_regex::is_valid_ecma_regex(text)
            })
            .build(schema)
            .map_err(|e| SchemaError::invalid(describe_schema_error(&e)))?;
        Ok(CompiledSchema {
            validator,
            hash: SchemaHash::of(schema),
            bounds,
        })
    }

    /// [`CompiledSchema::compile`] with [`DEFAULT_SCHEMA_COST`]; for call
    /// sites not yet given a configured limit.
    pub fn compile_default(schema: &serde_json::Value) -> Result<Self, SchemaError> {
        Self::compile(schema, DEFAULT_SCHEMA_COST)
    }

    /// The schema's evaluation cost: validating a value `v` takes at most
    /// `cost() * instance_units(v)` units (see [`evaluation_cost`]), which
    /// is what lets a caller bound a call's validation before running it.
    pub fn cost(&self) -> u64 {
        self.bounds.work
    }

    /// Whether validating `value` stays within [`VALIDATION_BUDGET`] and
    /// [`MAX_EVALUATION_DEPTH`]: check before [`CompiledSchema::validate`]
    /// whenever the value comes from outside. Costs one pass over at most
    /// the admissible part of the value.
    pub fn admit(&self, value: &serde_json::Value) -> Result<(), Inadmissible> {
        let most_units = VALIDATION_BUDGET / self.cost().max(1);
        if instance_units(value, most_units) > most_units {
            return Err(Inadmissible::TooLarge { most_units });
        }
        let levels = instance_depth(value, MAX_INSTANCE_DEPTH);
        if self.depth_for(levels) > MAX_EVALUATION_DEPTH {
            let most_levels = (0..levels)
                .rev()
                .find(|&l| self.depth_for(l) <= MAX_EVALUATION_DEPTH)
                .unwrap_or(0);
            return Err(Inadmissible::TooDeep {
                levels,
                most_levels,
            });
        }
        Ok(())
    }

    /// How deep the validator's recursion can go for a value nested
    /// `levels` deep (see [`Bounds::depth_for`]); the invoker refuses
    /// arguments for which this exceeds [`MAX_EVALUATION_DEPTH`].
    pub fn depth_for(&self, levels: usize) -> u64 {
        self.bounds.depth_for(levels)
    }

    /// The schema's canonical hash.
    pub fn hash(&self) -> &SchemaHash {
        &self.hash
    }

    /// Checks `arguments`; on failure returns up to [`MAX_VIOLATIONS`]
    /// violations, each with its JSON pointer.
    ///
    /// Reporting violations costs far more than checking: the validator
    /// re-evaluates every branch of a failed combinator to explain it, at
    /// every level of nesting. When that work could exceed
    /// [`ERROR_DETAIL_BUDGET`] (a costly schema and many values), one
    /// violation at the root says the arguments do not match instead.
    pub fn validate(&self, arguments: &serde_json::Value) -> Result<(), Vec<Violation>> {
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let depth = instance_depth(arguments, MAX_INSTANCE_DEPTH);
        let explain = self
            .cost()
            .saturating_mul(self.depth_for(depth))
            .saturating_mul(value_count(arguments, ERROR_DETAIL_BUDGET));
        if explain > ERROR_DETAIL_BUDGET {
            return Err(vec![Violation {
                instance_path: String::new(),
                schema_path: String::new(),
                message: "the value does not match the schema (too large for this schema to \
                          list each violation; check it against the schema)"
                    .into(),
            }]);
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
    let is_pattern = at.ends_with("/pattern") || at.contains("/patternProperties/");
    if let jsonschema::error::ValidationErrorKind::Format { format } = e.kind()
        && format == "regex"
        && is_pattern
    {
        return format!(
            "the regex {} at schema {at} cannot run in linear time: look-around, \
             backreferences and automata over {} KiB are not supported",
            e.instance(),
            REGEX_SIZE_LIMIT >> 10
        );
    }
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
        let schema = CompiledSchema::compile_default(&json!({
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
        let schema = CompiledSchema::compile_default(&json!({
            "type": "array", "prefixItems": [{"type": "string"}]
        }))
        .unwrap();
        assert!(schema.validate(&json!([1])).is_err());
        // Draft 7 ignores `prefixItems`, honouring `$schema`.
        let draft7 = CompiledSchema::compile_default(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array", "prefixItems": [{"type": "string"}]
        }))
        .unwrap();
        assert!(draft7.validate(&json!([1])).is_ok());
    }

    #[test]
    fn invalid_schemas_and_remote_refs_are_refused() {
        assert!(CompiledSchema::compile_default(&json!({"type": 12})).is_err());
        assert!(CompiledSchema::compile_default(&json!("object")).is_err());
        let err =
            CompiledSchema::compile_default(&json!({"$ref": "https://example.com/schema.json"}))
                .unwrap_err();
        assert!(err.to_string().contains("not allowed"), "{err}");
    }

    #[test]
    fn backtracking_patterns_run_in_linear_time() {
        // Exponential under a backtracking engine; the linear engine answers
        // at once (a regression would hang here, not fail).
        let schema = CompiledSchema::compile_default(&json!({"pattern": "^(a+)+$"})).unwrap();
        let evil = format!("{}!", "a".repeat(40));
        assert!(schema.validate(&json!(evil)).is_err());
        assert!(schema.validate(&json!("a".repeat(40))).is_ok());
        let keys = CompiledSchema::compile_default(&json!({
            "patternProperties": {"^(a|aa)+$": {"type": "integer"}}
        }))
        .unwrap();
        assert!(keys.validate(&json!({evil: "x"})).is_ok());
    }

    #[test]
    fn patterns_the_linear_engine_cannot_run_are_refused_at_compile() {
        for (schema, at) in [
            (json!({"pattern": "^(?=.*[0-9]).{8,}$"}), "/pattern"),
            (
                json!({"properties": {"p": {"pattern": "(a)\\1"}}}),
                "/properties/p/pattern",
            ),
            (
                json!({"patternProperties": {"^(?!x)": {}}}),
                "/patternProperties",
            ),
        ] {
            let err = CompiledSchema::compile_default(&schema).unwrap_err();
            let message = err.to_string();
            assert!(matches!(err, SchemaError::Invalid { .. }), "{message}");
            assert!(
                message.contains("regex") && message.contains(at),
                "{message}"
            );
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[test]
    fn format_regex_is_an_annotation_by_default_and_bounded_when_asserted() {
        let annotation = CompiledSchema::compile_default(&json!({"format": "regex"})).unwrap();
        assert!(annotation.validate(&json!("^(a")).is_ok());
        let asserted = CompiledSchema::compile_default(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#", "format": "regex"
        }))
        .unwrap();
        assert!(asserted.validate(&json!("^a+$")).is_ok());
        assert!(asserted.validate(&json!("^(a")).is_err());
        // Named groups make the syntax check quadratic: long strings are refused.
        let long: String = (0..200).map(|i| format!("(?<g{i}>a)")).collect();
        assert!(long.len() > MAX_FORMAT_REGEX_LEN);
        assert!(asserted.validate(&json!(long)).is_err());
    }

    #[test]
    fn costly_schemas_are_refused_with_limit_and_cost() {
        let mut defs = serde_json::Map::new();
        for i in 1..40 {
            let next = format!("#/$defs/a{}", i + 1);
            defs.insert(
                format!("a{i}"),
                json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("a40".into(), json!({"type": "string"}));
        let bomb = json!({"$defs": defs, "$ref": "#/$defs/a1"});
        let err = CompiledSchema::compile(&bomb, 1_000).unwrap_err();
        let SchemaError::TooCostly {
            limit,
            cost,
            reason,
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!(*limit, 1_000);
        assert!(*cost > 1_000 && reason.contains("/anyOf"), "{err}");
        assert!(!err.to_string().contains('\n'));
        // An in-place cycle is invalid, not costly.
        let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        let err = CompiledSchema::compile_default(&cycle).unwrap_err();
        assert!(
            matches!(&err, SchemaError::Invalid { reason } if reason.contains("/$defs/a/$ref")),
            "{err}"
        );
        let tree = json!({"properties": {"kids": {"items": {"$ref": "#"}}}});
        assert_eq!(CompiledSchema::compile(&tree, 10).unwrap().cost(), 4);
    }

    #[test]
    fn every_real_schema_compiles_far_below_the_default_cost() {
        // The host's plugins (fs, hostile), GitHub's, Notion's and
        // Playwright's MCP servers, and Pydantic models.
        let real: serde_json::Value =
            serde_json::from_str(include_str!("schema/testdata/real_schemas.json")).unwrap();
        let real = real.as_object().unwrap();
        assert!(real.len() > 30);
        for (name, schema) in real {
            let compiled =
                CompiledSchema::compile_default(schema).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                compiled.cost() * 20 <= DEFAULT_SCHEMA_COST,
                "{name}: {}",
                compiled.cost()
            );
        }
    }
}
