//! Each tool on its own account: the checks the registry makes of one tool
//! (its name, a duplicate of it, its description, title and schemas), and
//! [`Registry::screen`], which leaves out, with why, each tool of a source
//! that would fail them, so that one bad tool does not refuse the others.
//!
//! Invariants:
//! - [`Registry::screen`] and [`Registry::register`] check a tool with the
//!   same functions ([`tool_name`], [`compiled`]), so a tool screening
//!   keeps is never refused by registering for itself, and one it leaves
//!   out would have been.
//! - Screening decides nothing that is the whole registration's: the
//!   plugin's name, how many tools and servers it has and their total size
//!   are left to [`Registry::register`], which still refuses the whole
//!   source for them.

use std::collections::BTreeSet;

use super::limits::Meter;
use super::{
    MAX_SEGMENT_LEN, MAX_TOOL_NAME_LEN, RegistrationLimit, RegistrationLimits, Registry,
    RegistryError, ToolName, check_segment,
};
use crate::schema::CompiledSchema;
use crate::source::PendingTool;
use crate::tool::ToolDefinition;

/// A tool a source offered that is not registered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefusedTool {
    /// The source's name (the plugin's, from the config).
    pub plugin: String,
    /// The tool's full name as far as it can be made,
    /// `<plugin>/<server>.<tool>`, safe for one line (through
    /// [`one_line`](crate::display::one_line)) and cut past the longest
    /// valid name.
    pub name: String,
    /// Why the registry refuses it.
    pub error: RegistryError,
}

impl Registry {
    /// Splits one source's `tools` into those the registry would accept on
    /// their own account and those it would refuse, each with why, in the
    /// source's order: a tool or server name that breaks the naming rules,
    /// a full name already offered by an earlier tool of the source (the
    /// first stays, whether or not it is itself refused), a description or
    /// title over its limit, an input or output schema that is too large,
    /// too costly or does not compile.
    ///
    /// What is the whole registration's is not screened: when `name` is not
    /// a valid plugin name every tool is kept, and the counts of tools and
    /// servers and the total size are left, like a duplicate plugin, to
    /// [`Registry::register`], which refuses the whole source for them.
    pub fn screen(
        name: &str,
        tools: Vec<PendingTool>,
        limits: &RegistrationLimits,
    ) -> (Vec<PendingTool>, Vec<RefusedTool>) {
        if check_segment("plugin", name).is_err() {
            return (tools, Vec::new());
        }
        // The total is the registration's: each tool is metered alone.
        let mut alone = *limits;
        alone.total_bytes = usize::MAX;
        let mut meter = Meter::new(name, &alone);
        let mut offered = BTreeSet::new();
        let mut kept = Vec::with_capacity(tools.len());
        let mut refused = Vec::new();
        for pending in tools {
            let checked = tool_name(name, &pending, false).and_then(|tool_name| {
                if !offered.insert(tool_name.full.clone()) {
                    return Err(RegistryError::Duplicate(tool_name.full));
                }
                compiled(&tool_name, &pending.definition, &mut meter, &alone).map(drop)
            });
            match checked {
                Ok(()) => kept.push(pending),
                Err(error) => refused.push(RefusedTool {
                    plugin: name.to_owned(),
                    name: shown(name, &pending),
                    error,
                }),
            }
        }
        (kept, refused)
    }
}

/// The full name of `pending` as source `name` offers it (or, with `bare`,
/// its tool name alone), checked against the naming rules.
pub(super) fn tool_name(
    name: &str,
    pending: &PendingTool,
    bare: bool,
) -> Result<ToolName, RegistryError> {
    if bare {
        ToolName::bare(&pending.definition.name)
    } else {
        ToolName::new(name, &pending.server, &pending.definition.name)
    }
}

/// Checks `definition`'s description and title against their limits and
/// compiles its schemas, each metered and within its size and cost: the
/// compiled input schema and output schema, if it declares one.
pub(super) fn compiled(
    tool_name: &ToolName,
    definition: &ToolDefinition,
    meter: &mut Meter<'_>,
    limits: &RegistrationLimits,
) -> Result<(CompiledSchema, Option<CompiledSchema>), RegistryError> {
    meter.text(
        tool_name,
        RegistrationLimit::Description,
        &definition.description,
    )?;
    if let Some(title) = &definition.title {
        meter.text(tool_name, RegistrationLimit::Title, title)?;
    }
    meter.spend(tool_name.as_str().len())?;
    let compile = |meter: &mut Meter<'_>, which: &'static str, schema: &serde_json::Value| {
        meter.schema(tool_name, which, schema)?;
        CompiledSchema::compile(schema, limits.schema_cost)
            .map_err(|e| meter.schema_refused(tool_name, which, e))
    };
    if let Some(reason) = not_for_objects(&definition.input_schema) {
        return Err(RegistryError::InvalidSchema {
            name: tool_name.full.clone(),
            which: "input",
            reason,
        });
    }
    let schema = compile(meter, "input", &definition.input_schema)?;
    let output_schema = definition
        .output_schema
        .as_ref()
        .map(|schema| compile(meter, "output", schema))
        .transpose()?;
    Ok((schema, output_schema))
}

/// The keyword at the root of an input schema by which the plugin SDK
/// says why it refuses a tool's argument type (a map keyed by a struct,
/// which compiles but which no call could give): the tool is refused
/// alone, with that reason, and the plugin's other tools load.
pub const REFUSED_KEYWORD: &str = "x-tiny-harness-refused";

/// Why an input schema admits no JSON object, if it says so at its root:
/// a tool's arguments are one object (MCP's `inputSchema` and every
/// provider's parameters are object schemas), so such a tool could never
/// be called. A schema that does not name its type is not judged here.
fn not_for_objects(schema: &serde_json::Value) -> Option<String> {
    const FIX: &str =
        "a tool's arguments are a JSON object (in Rust, take a struct with named fields)";
    // The plugin SDK's own refusal of an argument type that compiled but
    // that no call could give ([`REFUSED_KEYWORD`]), with its reason.
    if let Some(why) = schema
        .get(REFUSED_KEYWORD)
        .and_then(serde_json::Value::as_str)
    {
        return Some(crate::display::one_line_cut(why, 512));
    }
    match schema {
        serde_json::Value::Bool(false) => Some(format!("it admits nothing: {FIX}")),
        serde_json::Value::Object(root) => match root.get("type") {
            Some(serde_json::Value::String(kind)) if kind != "object" => Some(format!(
                "its type is {}, not \"object\": {FIX}",
                crate::display::one_line_cut(&format!("{kind:?}"), 40)
            )),
            Some(serde_json::Value::Array(kinds))
                if !kinds.iter().any(|k| k.as_str() == Some("object")) =>
            {
                Some(format!("none of its types is \"object\": {FIX}"))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `<plugin>/<server>.<tool>` for a tool whose name may break the rules:
/// on one line, and cut past the longest name that keeps them.
fn shown(name: &str, pending: &PendingTool) -> String {
    let full = format!("{name}/{}.{}", pending.server, pending.definition.name);
    crate::display::one_line_cut(&full, 2 * MAX_SEGMENT_LEN + MAX_TOOL_NAME_LEN + 2)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::registry::tests::{Nothing, pending};

    fn names(tools: &[PendingTool]) -> Vec<String> {
        tools
            .iter()
            .map(|t| format!("{}.{}", t.server, t.definition.name))
            .collect()
    }

    #[test]
    fn each_tool_is_refused_on_its_own_account_and_the_rest_register() {
        let limits = RegistrationLimits::default();
        let mut bad_schema = pending("s", "bad_schema");
        bad_schema.definition.input_schema = serde_json::json!({"type": 12});
        let mut bad_output = pending("s", "bad_output");
        bad_output.definition.output_schema = Some(serde_json::json!({"type": "objekt"}));
        let mut long = pending("s", "long");
        long.definition.description = "d".repeat(limits.description_bytes + 1);
        let mut second = pending("s", "good");
        second.definition.description = "a second good".into();
        let offered = vec![
            pending("s", "good"),
            bad_schema,
            pending("s", "bad name!"),
            pending("Bad\u{1b}", "t"),
            second,
            bad_output,
            long,
            pending("t", "other"),
        ];
        let (kept, refused) = Registry::screen("p", offered.clone(), &limits);
        assert_eq!(names(&kept), ["s.good", "t.other"]);
        let why: Vec<(&str, &RegistryError)> = refused
            .iter()
            .map(|r| (r.name.as_str(), &r.error))
            .collect();
        assert!(
            matches!(
                why.as_slice(),
                [
                    ("p/s.bad_schema", RegistryError::InvalidSchema { which: "input", .. }),
                    ("p/s.bad name!", RegistryError::InvalidName { what: "tool", .. }),
                    (r"p/Bad\x1b.t", RegistryError::InvalidName { what: "server", .. }),
                    ("p/s.good", RegistryError::Duplicate(dup)),
                    ("p/s.bad_output", RegistryError::InvalidSchema { which: "output", .. }),
                    ("p/s.long", RegistryError::OverLimit { limit: RegistrationLimit::Description, .. }),
                ] if dup == "p/s.good"
            ),
            "{why:#?}"
        );
        assert!(refused.iter().all(|r| r.plugin == "p"));

        // What it keeps registers; each tool it leaves out is refused by
        // registering for the same reason.
        let nothing = || -> Arc<dyn crate::source::ToolSource> { Arc::new(Nothing) };
        let mut registry = Registry::new();
        assert_eq!(registry.register("p", kept, nothing(), &limits), Ok(2));
        for (index, refused) in [1, 2, 3, 4, 5, 6].into_iter().zip(&refused) {
            let alone = match index {
                4 => vec![offered[0].clone(), offered[4].clone()],
                _ => vec![offered[index].clone()],
            };
            let err = Registry::new().register("p", alone, nothing(), &limits);
            assert_eq!(err, Err(refused.error.clone()), "{}", refused.name);
        }
    }

    #[test]
    fn a_tool_the_plugin_sdk_refused_is_refused_alone_with_its_reason() {
        let mut refused = pending("s", "tally");
        refused.definition.input_schema = serde_json::json!({
            "type": "object",
            REFUSED_KEYWORD: "`counts` is a map keyed by a struct\u{1b}[2J",
        });
        let limits = RegistrationLimits::default();
        let (kept, out) = Registry::screen("p", vec![pending("s", "good"), refused], &limits);
        assert_eq!(names(&kept), ["s.good"]);
        assert_eq!(
            out[0].error.to_string(),
            "tool p/s.tally has an invalid input schema: `counts` is a map keyed by a struct\\x1b[2J"
        );
    }

    #[test]
    fn a_duplicate_of_a_refused_tool_is_refused_too() {
        let mut first = pending("s", "t");
        first.definition.input_schema = serde_json::json!({"type": 12});
        let (kept, refused) = Registry::screen(
            "p",
            vec![first, pending("s", "t")],
            &RegistrationLimits::default(),
        );
        assert!(kept.is_empty());
        assert!(matches!(refused[1].error, RegistryError::Duplicate(_)));
    }

    #[test]
    fn what_is_the_whole_registrations_is_left_to_register() {
        let limits = RegistrationLimits {
            tools: 1,
            total_bytes: 10,
            ..RegistrationLimits::default()
        };
        let tools = || vec![pending("s", "a"), pending("s", "b")];
        // Two tools over a limit of one, over the total: both kept.
        let (kept, refused) = Registry::screen("p", tools(), &limits);
        assert_eq!((kept.len(), refused.len()), (2, 0));
        let err = Registry::new()
            .register("p", kept, Arc::new(Nothing), &limits)
            .unwrap_err();
        assert!(matches!(
            err,
            RegistryError::OverLimit {
                limit: RegistrationLimit::Tools,
                ..
            }
        ));
        // A bad plugin name is the registration's: nothing is refused here.
        let (kept, refused) = Registry::screen("Bad", tools(), &limits);
        assert_eq!((kept.len(), refused.len()), (2, 0));
    }

    #[test]
    fn a_refused_name_is_shown_on_one_line_and_cut() {
        let long = "x".repeat(10_000);
        let (_, refused) = Registry::screen(
            "p",
            vec![pending("s", &format!("{long}\n"))],
            &RegistrationLimits::default(),
        );
        let name = &refused[0].name;
        assert!(
            name.starts_with("p/s.xxx") && name.ends_with(" …"),
            "{name}"
        );
        assert!(name.chars().count() < 300, "{}", name.len());
    }

    #[test]
    fn an_input_schema_that_admits_no_object_is_refused_saying_why() {
        let limits = RegistrationLimits::default();
        let with = |name: &str, schema: serde_json::Value| {
            let mut tool = pending("s", name);
            tool.definition.input_schema = schema;
            tool
        };
        let offered = vec![
            with("text", serde_json::json!({"type": "string"})),
            with("list", serde_json::json!({"type": ["array", "null"]})),
            with("never", serde_json::json!(false)),
            with("any", serde_json::json!({})),
            with("maybe", serde_json::json!({"type": ["object", "null"]})),
            with("plain", serde_json::json!({"type": "object"})),
        ];
        let (kept, refused) = Registry::screen("p", offered, &limits);
        assert_eq!(names(&kept), ["s.any", "s.maybe", "s.plain"]);
        let why: Vec<String> = refused.iter().map(|r| r.error.to_string()).collect();
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(
            why[0].contains(
                "its type is \"string\", not \"object\": a tool's arguments are a JSON object"
            ),
            "{why:?}"
        );
        assert!(
            why[1].contains("none of its types is \"object\""),
            "{why:?}"
        );
        assert!(why[2].contains("it admits nothing"), "{why:?}");
        assert!(
            refused
                .iter()
                .all(|r| matches!(r.error, RegistryError::InvalidSchema { which: "input", .. }))
        );
    }
}
