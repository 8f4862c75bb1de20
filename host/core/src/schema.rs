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
/// Cheap to clone (shared): every call hands its definition's hash to the
/// recorder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaHash(std::sync::Arc<str>);

impl Serialize for SchemaHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl SchemaHash {
    /// Hashes `schema` in its RFC 8785 canonical form.
    pub fn of(schema: &serde_json::Value) -> Self {
        // Canonicalisation only fails for values serde_json cannot hold
        // (non-finite numbers), so the fallback is unreachable in practice;
        // it still yields a stable, distinct string rather than a panic.
        let canonical =
            serde_json_canonicalizer::to_string(schema).unwrap_or_else(|_| schema.to_string());
        SchemaHash(hex::encode(Sha256::digest(canonical.as_bytes())).into())
    }

    /// A digest computed elsewhere (64 lowercase hex digits), such as a
    /// definition's pin hash.
    pub(crate) fn from_digest(hex: String) -> Self {
        SchemaHash(hex.into())
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
        self.admit_sized(value, None)
    }

    /// [`CompiledSchema::admit`] for a value whose compact JSON is known to
    /// be `compact_len` bytes long. A value has at most one unit per byte
    /// of it, and each container it nests takes two, so no walk counts
    /// units when that many are admissible and too few bytes remain to
    /// nest past [`MAX_INSTANCE_DEPTH`]; and none measures depth when this
    /// schema admits any.
    pub fn admit_sized(
        &self,
        value: &serde_json::Value,
        compact_len: Option<usize>,
    ) -> Result<(), Inadmissible> {
        let most_units = VALIDATION_BUDGET / self.cost().max(1);
        let small = compact_len
            .is_some_and(|len| len as u64 <= most_units && len < 2 * (MAX_INSTANCE_DEPTH + 1));
        if !small && instance_units(value, most_units) > most_units {
            return Err(Inadmissible::TooLarge { most_units });
        }
        if self.bounds.any_depth_within() {
            return Ok(());
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
mod tests;
