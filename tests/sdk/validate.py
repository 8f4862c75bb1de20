"""Checks what the tiny-harness CLI emits against the providers' official SDKs.

Run with the interpreter of tests/sdk/.venv (tests/sdk/requirements.txt):

    validate.py definitions PROVIDER FILE [--mcp-version V]
    validate.py results PROVIDER FILE [--tools FILE] [--mcp-version V]
    validate.py selftest

PROVIDER is one of the CLI's names: openai-chat, openai-responses,
anthropic, gemini, bedrock, mcp. FILE is JSON the CLI printed (`-` reads
standard input):

- definitions: what `tiny-harness tools --provider P --json` prints, an
  array of `{name, wire_name, definition, ...}`; each `definition` is
  validated with the SDK's own request-side types.
- results: what `tiny-harness replay FILE --provider P --json` prints, an
  array of turns `{turn, calls, results, ...}`; each entry of `results` is
  validated with the SDK's request-side types for tool results. For mcp,
  `--tools FILE` (the `tools --provider mcp --json` output) adds the MCP
  client's structured-output check, as mcp.client.session.ClientSession
  makes it in `validate_tool_result`.

Exit code 0 when every item validates; 1 with one line per failure on
standard output, naming the item and the SDK's error; 2 on a usage error.

`selftest` builds deliberately broken definitions and results for every
provider and exits 0 only if every one of them is refused by the checks
above (and a well-formed sample of each is accepted), so that a green run
of the other commands means something.

What "validated" means, per provider (every check runs; an item fails if
any refuses it):

- Pydantic models and TypedDicts are validated from JSON with strict=True,
  then dumped again: a key we sent that the SDK type dropped (an unknown
  field of a TypedDict or a model with extra="ignore") is a failure, since
  the SDK would never send it on. Lazily validated `Iterable` fields are
  iterated, so their items are checked too.
- openai-chat: `ChatCompletionToolParam` (its `function` a
  `FunctionDefinition`), plus the name rule FunctionDefinition.name
  documents (a-z, A-Z, 0-9, `_` and `-`, at most 64); results:
  `ChatCompletionToolMessageParam`.
- openai-responses: `FunctionToolParam` (`ToolSearchToolParam` for a
  tool search, `NamespaceToolParam` and each function in it for a
  namespace); results: a `tool_search_output` as the SDK's
  `ResponseToolSearchOutputItemParamParam` with each tool a
  `FunctionToolParam`, otherwise the `FunctionCallOutput`
  member of `ResponseInputItemParam`, and the union itself.
- anthropic: `ToolParam` (a server tool search as its own
  `ToolSearchToolBm25_20251119Param` or `...Regex...` type), and its `input_schema` as the SDK's typed
  `InputSchema` (`type: "object"`; the SDK's union also admits any dict,
  the API does not); results: each message a user `MessageParam`, each
  block a `ToolResultBlockParam`.
- gemini: `types.FunctionDeclaration` and `types.Tool` (extra="forbid"),
  a round trip `model_dump(exclude_none=True, by_alias=True)` that must
  drop no field, and any warning the SDK raises while validating (an
  unknown `Type` is accepted with a warning) counts as a refusal; results:
  `types.Content` whose parts are all `FunctionResponse` parts.
- bedrock: a minimal Converse request around the tools (`toolConfig`) or
  the results (`messages`), through botocore's ParamValidator against the
  bedrock-runtime service model. ParamValidator checks types, required
  members, unions and minimums but not `enum`, `max` or `pattern`; the
  same service model's `enum`, `max` and `pattern` constraints are
  checked too (patterns matched whole, as the service enforces them).
- mcp, at protocol revision `--mcp-version` (default 2025-06-18, what
  the CLI answers a request that names none): `mcp.types.Tool`, and a
  `tools/list` result holding it through `mcp_types.methods` for that
  revision (the schema-exact wire shape: through 2025-11-25 an
  `inputSchema` of `type: "object"`; a field the revision does not know is
  dropped, so refused here), an `outputSchema` must compile as the client
  compiles it, and from 2026-07-28 the client's x-mcp-header rule (it
  drops a tool that breaks it); results: each response a
  `JSONRPCResponse`, its `result` a `mcp.types.CallToolResult` and the
  revision's `tools/call` result, and the client's structured-output
  check.
"""

from __future__ import annotations

import collections.abc
import json
import re
import sys
import warnings
from typing import Any, Callable

import pydantic

PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini", "bedrock", "mcp")

# The MCP revision to validate at (--mcp-version): by default the one the
# CLI's mcp provider answers a request that names none in
# host/provider/src/mcp.rs.
MCP_VERSION = "2025-06-18"

# Longest error text kept per failure line.
MAX_ERROR = 600


# --- error text --------------------------------------------------------------


def one_line(text: str) -> str:
    """`text` on one line, cut at MAX_ERROR characters."""
    text = " ".join(str(text).split("\n"))
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 2] + " …"


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 2] + " …"


def pydantic_text(error: pydantic.ValidationError, limit: int = 4) -> str:
    """A ValidationError's errors, `loc: msg`, the first `limit` of them."""
    errors = error.errors(include_url=False)
    parts = []
    for e in errors[:limit]:
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        parts.append(f"{loc}: {e['msg']} [type={e['type']}, input={short(e.get('input'))}]")
    if len(errors) > limit:
        parts.append(f"(+{len(errors) - limit} more)")
    return f"{error.title}: " + "; ".join(parts)


# --- round trips -------------------------------------------------------------


def materialize(value: Any) -> Any:
    """Plain JSON-like data from a validated value: models dumped by alias
    without None, lazily validated iterables iterated (which validates
    their items, raising ValidationError)."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)) or isinstance(value, collections.abc.Iterator):
        return [materialize(v) for v in value]
    return value


def dropped(sent: Any, kept: Any, path: str = "", full: Any = None) -> list[str]:
    """JSON pointers of the keys of `sent` that `kept` lacks. A key sent as
    null that `full` (the dump with None kept) still has is not counted:
    only exclude_none dropped it."""
    out: list[str] = []
    if isinstance(sent, dict):
        if not isinstance(kept, dict):
            return out
        for key, value in sent.items():
            pointer = f"{path}/{key}"
            if key not in kept:
                if value is None and isinstance(full, dict) and key in full:
                    continue
                out.append(pointer)
            else:
                sub_full = full.get(key) if isinstance(full, dict) else None
                out.extend(dropped(value, kept[key], pointer, sub_full))
    elif isinstance(sent, list) and isinstance(kept, list):
        if len(kept) < len(sent):
            out.append(f"{path}/{len(kept)}..{len(sent) - 1}")
        for i, (s, k) in enumerate(zip(sent, kept)):
            sub_full = full[i] if isinstance(full, list) and i < len(full) else None
            out.extend(dropped(s, k, f"{path}/{i}", sub_full))
    return out


def drop_error(type_name: str, pointers: list[str]) -> str:
    return f"{type_name} dropped {len(pointers)} field(s) we sent (unknown to the SDK): " + ", ".join(pointers[:8]) + (
        " …" if len(pointers) > 8 else ""
    )


_adapters: dict[Any, pydantic.TypeAdapter] = {}


def adapter(tp: Any) -> pydantic.TypeAdapter:
    if tp not in _adapters:
        _adapters[tp] = pydantic.TypeAdapter(tp)
    return _adapters[tp]


def check_typed(tp: Any, name: str, data: Any, drops: bool = True) -> list[str]:
    """Validates `data` (parsed JSON) as the SDK type `tp` (a TypedDict or
    a union of them), strictly; with `drops`, also that the validated value
    keeps every key sent. Python mode, not JSON mode: in JSON mode pydantic
    takes a string for an `Iterable` (of its characters), and the SDK's
    `Union[str, Iterable[...]]` fields would reject every string."""
    try:
        value = adapter(tp).validate_python(data, strict=True)
        kept = materialize(value)
    except pydantic.ValidationError as e:
        return [f"{name}: {pydantic_text(e)}"]
    except Exception as e:  # the SDK's own validators may raise anything
        return [f"{name}: the SDK raised {type(e).__name__}: {e}"]
    if drops:
        lost = dropped(data, kept)
        if lost:
            return [drop_error(name, lost)]
    return []


def check_model(model: type[pydantic.BaseModel], name: str, data: Any, sdk_warnings: str | None = None) -> tuple[list[str], Any]:
    """Validates `data` as the pydantic model `model`, strictly, from JSON,
    then a round trip model_dump(exclude_none=True, by_alias=True) that must
    keep every key sent. A warning raised from a file under `sdk_warnings`
    while validating is a refusal too. Returns the errors and the model."""
    errors: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = model.model_validate_json(json.dumps(data), strict=True)
        except pydantic.ValidationError as e:
            return [f"{name}: {pydantic_text(e)}"], None
        except Exception as e:  # the SDK's own validators may raise anything
            return [f"{name}: the SDK raised {type(e).__name__}: {e}"], None
        kept = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        full = value.model_dump(mode="json", by_alias=True)
    if sdk_warnings is not None:
        for w in caught:
            if sdk_warnings in w.filename.replace("\\", "/"):
                errors.append(f"{name}: the SDK warned: {w.message}")
    lost = dropped(data, kept, full=full)
    if lost:
        errors.append(drop_error(name, lost))
    return errors, value


# --- OpenAI ------------------------------------------------------------------

OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def openai_chat_definition(d: Any) -> list[str]:
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

    errors = check_typed(ChatCompletionToolParam, "ChatCompletionToolParam", d)
    function = d.get("function") if isinstance(d, dict) else None
    if isinstance(function, dict):
        if not errors:
            errors += check_typed(FunctionDefinition, "FunctionDefinition", function)
        name = function.get("name")
        if isinstance(name, str) and not OPENAI_NAME.fullmatch(name):
            errors.append(
                f"FunctionDefinition.name {name!r}: must be a-z, A-Z, 0-9, underscores and dashes, "
                "at most 64 (as the SDK documents it)"
            )
    return errors


def openai_chat_result(r: Any, _turn: dict, _tools: dict | None) -> list[str]:
    from openai.types.chat import ChatCompletionToolMessageParam

    return check_typed(ChatCompletionToolMessageParam, "ChatCompletionToolMessageParam", r)


def openai_responses_definition(d: Any) -> list[str]:
    from openai.types.responses import FunctionToolParam, NamespaceToolParam, ToolSearchToolParam

    kind = d.get("type") if isinstance(d, dict) else None
    if kind == "tool_search":
        return check_typed(ToolSearchToolParam, "ToolSearchToolParam", d)
    if kind == "namespace":
        errors = check_typed(NamespaceToolParam, "NamespaceToolParam", d)
        for i, tool in enumerate(d.get("tools") or []):
            errors += [f"tools[{i}]: {e}" for e in check_typed(FunctionToolParam, "FunctionToolParam", tool)]
        return errors
    return check_typed(FunctionToolParam, "FunctionToolParam", d)


def openai_responses_result(r: Any, _turn: dict, _tools: dict | None) -> list[str]:
    from openai.types.responses import FunctionToolParam, ResponseInputItemParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput
    from openai.types.responses.response_tool_search_output_item_param_param import (
        ResponseToolSearchOutputItemParamParam,
    )

    if isinstance(r, dict) and r.get("type") == "tool_search_output":
        errors = check_typed(ResponseToolSearchOutputItemParamParam, "ResponseInputItemParam (ToolSearchOutput)", r)
        for i, tool in enumerate(r.get("tools") or []):
            errors += [f"tools[{i}]: {e}" for e in check_typed(FunctionToolParam, "FunctionToolParam", tool)]
    else:
        errors = check_typed(FunctionCallOutput, "ResponseInputItemParam (FunctionCallOutput)", r)
    if not errors:
        # The item as a member of the input union, as `responses.create`
        # takes it (drops are not counted here: the member check did).
        errors = check_typed(ResponseInputItemParam, "ResponseInputItemParam", r, drops=False)
    return errors


# --- Anthropic ---------------------------------------------------------------


def anthropic_definition(d: Any) -> list[str]:
    from anthropic.types import ToolParam
    from anthropic.types.tool_param import InputSchemaTyped
    from anthropic.types.tool_search_tool_bm25_20251119_param import ToolSearchToolBm25_20251119Param
    from anthropic.types.tool_search_tool_regex_20251119_param import ToolSearchToolRegex20251119Param

    kind = d.get("type") if isinstance(d, dict) else None
    if kind == "tool_search_tool_bm25_20251119":
        return check_typed(ToolSearchToolBm25_20251119Param, "ToolSearchToolBm25_20251119Param", d)
    if kind == "tool_search_tool_regex_20251119":
        return check_typed(ToolSearchToolRegex20251119Param, "ToolSearchToolRegex20251119Param", d)
    errors = check_typed(ToolParam, "ToolParam", d)
    schema = d.get("input_schema") if isinstance(d, dict) else None
    if isinstance(d, dict) and "input_schema" in d:
        errors += check_typed(InputSchemaTyped, "ToolParam.input_schema (InputSchema)", schema)
    return errors


def anthropic_result(r: Any, _turn: dict, _tools: dict | None) -> list[str]:
    from anthropic.types import MessageParam, ToolResultBlockParam
    from anthropic.types.user_message_param import UserMessageParam

    # Each block as a ToolResultBlockParam first: the message's content is
    # a union of some twenty block types, whose errors say little.
    errors = []
    content = r.get("content") if isinstance(r, dict) else None
    if isinstance(content, list):
        for i, block in enumerate(content):
            errors += [f"content[{i}]: {e}" for e in check_typed(ToolResultBlockParam, "ToolResultBlockParam", block)]
    else:
        errors.append("MessageParam: content is not a list of tool_result blocks")
    if not errors:
        errors += check_typed(UserMessageParam, "MessageParam (user)", r)
    if not errors:
        errors += check_typed(MessageParam, "MessageParam", r, drops=False)
    return errors


# --- Gemini ------------------------------------------------------------------

GENAI = "google/genai/"


def gemini_definition(d: Any) -> list[str]:
    from google.genai import types

    errors, _ = check_model(types.FunctionDeclaration, "FunctionDeclaration", d, GENAI)
    if not errors:
        more, _ = check_model(types.Tool, "Tool", {"functionDeclarations": [d]}, GENAI)
        errors += more
    return errors


def gemini_result(r: Any, _turn: dict, _tools: dict | None) -> list[str]:
    from google.genai import types

    errors, content = check_model(types.Content, "Content", r, GENAI)
    if content is not None:
        for i, part in enumerate(content.parts or []):
            if part.function_response is None:
                errors.append(f"Content.parts[{i}]: not a FunctionResponse part")
        if not content.parts:
            errors.append("Content: no parts")
    return errors


# --- Bedrock -----------------------------------------------------------------

_bedrock: dict[str, Any] = {}


def converse_input_shape():
    if "shape" not in _bedrock:
        import botocore.session

        model = botocore.session.get_session().get_service_model("bedrock-runtime")
        _bedrock["shape"] = model.operation_model("Converse").input_shape
    return _bedrock["shape"]


def service_constraints(value: Any, shape: Any, path: str, out: list[str]) -> None:
    """The service model's enum, max and pattern constraints, which
    botocore's ParamValidator does not check. Members it does not know are
    left to ParamValidator, which reports them."""
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False) or not isinstance(value, dict):
            return
        for key, member in value.items():
            if key in shape.members:
                service_constraints(member, shape.members[key], f"{path}.{key}" if path else key, out)
    elif kind == "list":
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                service_constraints(item, shape.member, f"{path}[{i}]", out)
    elif kind == "map":
        if isinstance(value, dict):
            for key, item in value.items():
                service_constraints(key, shape.key, f"{path} (key {key!r})", out)
                service_constraints(item, shape.value, f"{path}.{key}", out)
    elif kind == "string":
        if not isinstance(value, str):
            return
        enum = getattr(shape, "enum", None) or shape.metadata.get("enum")
        if enum and value not in enum:
            out.append(f"Invalid value for parameter {path}, value: {short(value)}, valid values: {', '.join(enum)}")
        limit = shape.metadata.get("max")
        if limit is not None and len(value) > limit:
            out.append(f"Invalid length for parameter {path}, length: {len(value)}, valid max length: {limit}")
        pattern = shape.metadata.get("pattern")
        if pattern:
            try:
                matched = re.fullmatch(pattern, value, re.DOTALL) is not None
            except re.error:
                matched = True  # a pattern Python's re cannot read: not checked
            if not matched:
                out.append(f"Invalid value for parameter {path}, value: {short(value)}, must match pattern: {pattern}")
    elif kind in ("integer", "long", "float", "double"):
        limit = shape.metadata.get("max")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and limit is not None and value > limit:
            out.append(f"Invalid range for parameter {path}, value: {value}, valid max value: {limit}")


def converse(request: dict) -> list[str]:
    from botocore.validate import ParamValidator

    shape = converse_input_shape()
    errors = []
    report = ParamValidator().validate(request, shape)
    if report.has_errors():
        errors += [f"botocore ParamValidator: {line}" for line in report.generate_report().split("\n") if line]
    constraints: list[str] = []
    service_constraints(request, shape, "", constraints)
    errors += [f"bedrock-runtime service model: {line}" for line in constraints]
    return errors


def bedrock_definition(d: Any) -> list[str]:
    return converse(
        {
            "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
            "messages": [{"role": "user", "content": [{"text": "Use the tools."}]}],
            "toolConfig": {"tools": [d]},
        }
    )


def bedrock_result(r: Any, turn: dict, _tools: dict | None) -> list[str]:
    uses = [
        {"toolUse": {"toolUseId": str(c.get("id")), "name": str(c.get("wire_name")), "input": {}}}
        for c in turn.get("calls") or []
    ] or [{"text": "(no calls)"}]
    return converse(
        {
            "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
            "messages": [
                {"role": "user", "content": [{"text": "Use the tools."}]},
                {"role": "assistant", "content": uses},
                r,
            ],
        }
    )


# --- MCP ---------------------------------------------------------------------


def mcp_definition(d: Any) -> list[str]:
    import mcp.types as types
    from mcp_types import methods

    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    errors, tool = check_model(types.Tool, "mcp.types.Tool", d)
    listing: dict[str, Any] = {"tools": [d]}
    if MCP_VERSION in MODERN_PROTOCOL_VERSIONS:
        # The listing's own required fields from 2026-07-28 on, which the
        # CLI's definitions do not carry.
        listing.update({"resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
    try:
        methods.parse_server_result("tools/list", MCP_VERSION, listing)
        wire = methods.serialize_server_result("tools/list", MCP_VERSION, listing)
        lost = dropped(d, wire["tools"][0])
        if lost:
            errors.append(drop_error(f"tools/list result ({MCP_VERSION})", lost))
    except pydantic.ValidationError as e:
        errors.append(f"tools/list result ({MCP_VERSION}): {pydantic_text(e)}")
    if tool is not None and tool.output_schema is not None:
        # As ClientSession._output_schema_validator compiles it.
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for

        try:
            validator_for(tool.output_schema).check_schema(tool.output_schema)
        except SchemaError as e:
            errors.append(f"Invalid schema for tool {tool.name}: {e.message}")
    if tool is not None and MCP_VERSION in MODERN_PROTOCOL_VERSIONS:
        # ClientSession._absorb_tool_listing drops such a tool.
        from mcp.shared.inbound import find_invalid_x_mcp_header

        reason = find_invalid_x_mcp_header(tool.input_schema)
        if reason is not None:
            errors.append(f"the client drops tool {tool.name!r}: invalid x-mcp-header ({reason})")
    return errors


def mcp_tool_result(name: str, result: Any, output_schema: dict | None) -> list[str]:
    """ClientSession.validate_tool_result, for a tool whose listing gave
    `output_schema`."""
    if output_schema is None:
        return []
    from jsonschema import SchemaError
    from jsonschema import exceptions as jsonschema_exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    if result.structured_content is None and "structured_content" not in result.model_fields_set:
        return [f"Tool {name} has an output schema but did not return structured content"]
    validator_cls = validator_for(output_schema)
    try:
        validator_cls.check_schema(output_schema)
    except SchemaError as e:
        return [f"Invalid schema for tool {name}: {e.message}"]
    validator = validator_cls(output_schema, registry=Registry())
    try:
        error = jsonschema_exceptions.best_match(validator.iter_errors(result.structured_content))
    except Unresolvable as e:
        return [f"Invalid schema for tool {name}: {e}"]
    if error is not None:
        return [f"Invalid structured content returned by tool {name}: {error.message} (at {error.json_path})"]
    return []


def mcp_result(r: Any, turn: dict, tools: dict | None) -> list[str]:
    import mcp.types as types
    from mcp.types.jsonrpc import JSONRPCResponse
    from mcp_types import methods

    errors, _ = check_model(JSONRPCResponse, "JSONRPCResponse", r)
    result = r.get("result") if isinstance(r, dict) else None
    if not isinstance(result, dict):
        return errors or ["JSONRPCResponse: no result object"]
    more, parsed = check_model(types.CallToolResult, "mcp.types.CallToolResult", result)
    errors += more
    try:
        methods.parse_server_result("tools/call", MCP_VERSION, result)
        wire = methods.serialize_server_result("tools/call", MCP_VERSION, result)
        lost = dropped(result, wire)
        if lost:
            errors.append(drop_error(f"tools/call result ({MCP_VERSION})", lost))
    except pydantic.ValidationError as e:
        errors.append(f"tools/call result ({MCP_VERSION}): {pydantic_text(e)}")
    if tools is not None and parsed is not None and not parsed.is_error:
        # ClientSession.call_tool validates only results that are not errors.
        call = next((c for c in turn.get("calls") or [] if str(c.get("id")) == str(r.get("id"))), None)
        name = call.get("wire_name") if call else None
        if name in tools:
            errors += mcp_tool_result(name, parsed, tools[name])
    return errors


def mcp_listing(entries: list[dict]) -> dict[str, dict | None]:
    """Tool name to output schema, as ClientSession caches them from a
    tools/list result."""
    import mcp.types as types

    schemas: dict[str, dict | None] = {}
    for entry in entries:
        try:
            tool = types.Tool.model_validate(entry["definition"])
        except (pydantic.ValidationError, KeyError, TypeError):
            continue
        schemas[tool.name] = tool.output_schema
    return schemas


# --- dispatch ----------------------------------------------------------------

DEFINITIONS: dict[str, Callable[[Any], list[str]]] = {
    "openai-chat": openai_chat_definition,
    "openai-responses": openai_responses_definition,
    "anthropic": anthropic_definition,
    "gemini": gemini_definition,
    "bedrock": bedrock_definition,
    "mcp": mcp_definition,
}

RESULTS: dict[str, Callable[[Any, dict, dict | None], list[str]]] = {
    "openai-chat": openai_chat_result,
    "openai-responses": openai_responses_result,
    "anthropic": anthropic_result,
    "gemini": gemini_result,
    "bedrock": bedrock_result,
    "mcp": mcp_result,
}


def entries_of(data: Any) -> list[dict]:
    """The `tools --provider P --json` entries (a bare definition, or an
    MCP tools/list result, is taken as such)."""
    if isinstance(data, dict):
        if "definition" in data:
            return [data]
        if isinstance(data.get("tools"), list):
            return [{"definition": t} for t in data["tools"]]
        return [{"definition": data}]
    if isinstance(data, list):
        return [e if isinstance(e, dict) and "definition" in e else {"definition": e} for e in data]
    raise ValueError("not a JSON array or object of tool definitions")


def turns_of(data: Any) -> list[dict]:
    """The turns of `replay --json` output."""
    if isinstance(data, dict) and "results" in data:
        return [data]
    if isinstance(data, list) and all(isinstance(t, dict) and "results" in t for t in data):
        return data
    raise ValueError("not the JSON that `replay --json` prints (an array of turns with `results`)")


def definition_failures(provider: str, entries: list[dict]) -> tuple[list[str], int]:
    """One line per failure, and how many definitions passed."""
    lines = []
    passed = 0
    for i, entry in enumerate(entries):
        label = f"[{i}]"
        if entry.get("name") is not None:
            label += f" {entry['name']}"
        if entry.get("wire_name") is not None:
            label += f" (wire name {entry['wire_name']})"
        if entry["definition"] is None and entry.get("deferred"):
            # A deferred tool the request does not list (found by a search).
            passed += 1
            continue
        try:
            errors = DEFINITIONS[provider](entry["definition"])
        except Exception as e:  # a check that crashes refuses the item
            errors = [f"the check raised {type(e).__name__}: {e}"]
        if errors:
            lines += [one_line(f"{provider} definition {label}: {e}") for e in errors]
        else:
            passed += 1
    return lines, passed


def result_failures(provider: str, turns: list[dict], tools: dict | None) -> tuple[list[str], int]:
    lines = []
    passed = 0
    for t, turn in enumerate(turns):
        number = turn.get("turn", t + 1)
        results = turn.get("results")
        if not isinstance(results, list):
            lines.append(f"{provider} turn {number}: results is not an array")
            continue
        for j, r in enumerate(results):
            label = f"turn {number} result [{j}]"
            ident = result_id(r)
            if ident is not None:
                label += f" ({ident})"
            try:
                errors = RESULTS[provider](r, turn, tools)
            except Exception as e:
                errors = [f"the check raised {type(e).__name__}: {e}"]
            if errors:
                lines += [one_line(f"{provider} {label}: {e}") for e in errors]
            else:
                passed += 1
    return lines, passed


def result_id(r: Any) -> str | None:
    """The call a result answers, for naming it."""
    if not isinstance(r, dict):
        return None
    for key in ("tool_call_id", "call_id", "id"):
        if key in r:
            return f"{key} {r[key]}"
    blocks = r.get("content") if isinstance(r.get("content"), list) else r.get("parts")
    if isinstance(blocks, list):
        ids = []
        for b in blocks:
            if isinstance(b, dict):
                inner = b.get("toolResult") or b.get("functionResponse") or b
                ident = inner.get("tool_use_id") or inner.get("toolUseId") or inner.get("name") if isinstance(inner, dict) else None
                if ident is not None:
                    ids.append(str(ident))
        if ids:
            return "for " + ", ".join(ids)
    return None


# --- selftest ----------------------------------------------------------------


def _obj(props: dict | None = None, required: list | None = None) -> dict:
    schema: dict[str, Any] = {"type": "object", "properties": props or {"name": {"type": "string"}}}
    schema["required"] = required if required is not None else ["name"]
    return schema


GOOD_DEFINITIONS: dict[str, dict] = {
    "openai-chat": {"type": "function", "function": {"name": "hello__greet", "description": "Greets.", "parameters": _obj()}},
    "openai-responses": {"type": "function", "name": "hello__greet", "description": "Greets.", "parameters": _obj(), "strict": False},
    "anthropic": {"name": "hello__greet", "description": "Greets.", "input_schema": _obj()},
    "gemini": {"name": "hello__greet.x", "description": "Greets.", "parameters": _obj()},
    "bedrock": {"toolSpec": {"name": "hello__greet", "description": "Greets.", "inputSchema": {"json": _obj()}}},
    "mcp": {
        "name": "hello__greet.x",
        "description": "Greets.",
        "inputSchema": _obj(),
        "outputSchema": _obj({"greeting": {"type": "string"}}, ["greeting"]),
        "annotations": {"readOnlyHint": True, "idempotentHint": True},
    },
}


def _without(d: dict, *path: str) -> dict:
    d = json.loads(json.dumps(d))
    target = d
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return d


def _with(d: dict, path: tuple, value: Any) -> dict:
    d = json.loads(json.dumps(d))
    target = d
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return d


def broken_definitions() -> dict[str, list[tuple[str, Any]]]:
    g = GOOD_DEFINITIONS
    return {
        "openai-chat": [
            ("a tool missing name", _without(g["openai-chat"], "function", "name")),
            ("parameters that are not an object", _with(g["openai-chat"], ("function", "parameters"), "object")),
            ("a type other than function", _with(g["openai-chat"], ("type",), "tool")),
            ("an unknown field in the function", _with(g["openai-chat"], ("function", "input_schema"), _obj())),
            ("a name with a dot", _with(g["openai-chat"], ("function", "name"), "fs.read")),
            ("a name longer than 64", _with(g["openai-chat"], ("function", "name"), "n" * 65)),
        ],
        "openai-responses": [
            ("a tool missing name", _without(g["openai-responses"], "name")),
            ("parameters that are not an object", _with(g["openai-responses"], ("parameters",), ["name"])),
            ("no strict (required, if null)", _without(g["openai-responses"], "strict")),
            ("an unknown field", _with(g["openai-responses"], ("function",), {"name": "x"})),
            ("a description that is not a string", _with(g["openai-responses"], ("description",), 7)),
            ("a tool search run elsewhere", {"type": "tool_search", "execution": "elsewhere"}),
            ("a namespace without a description", {"type": "namespace", "name": "fs", "tools": [g["openai-responses"]]}),
            ("a namespace holding a broken function", {
                "type": "namespace", "name": "fs", "description": "d",
                "tools": [_without(g["openai-responses"], "name")]}),
        ],
        "anthropic": [
            ("a tool missing name", _without(g["anthropic"], "name")),
            ("an input schema that is not an object schema", _with(g["anthropic"], ("input_schema",), {"type": "string"})),
            ("an input schema that is not an object at all", _with(g["anthropic"], ("input_schema",), ["name"])),
            ("no input_schema", _without(g["anthropic"], "input_schema")),
            ("an unknown field", _with(g["anthropic"], ("parameters",), _obj())),
            ("a deferral that is not a boolean", _with(g["anthropic"], ("defer_loading",), "yes")),
            ("a BM25 tool search under another name", {"type": "tool_search_tool_bm25_20251119", "name": "search"}),
            ("a regex tool search with an unknown field", {
                "type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex", "pattern": "x"}),
        ],
        "gemini": [
            ("a declaration with an unknown field", _with(g["gemini"], ("strict",), True)),
            ("parameters with a JSON Schema keyword Gemini lacks", _with(g["gemini"], ("parameters", "const"), 1)),
            ("parameters with $schema", _with(g["gemini"], ("parameters", "$schema"), "https://json-schema.org/draft/2020-12/schema")),
            ("parameters with an unknown type", _with(g["gemini"], ("parameters", "type"), "objekt")),
            ("a type that is a list", _with(g["gemini"], ("parameters", "properties", "name", "type"), ["string", "null"])),
            ("parameters that are not an object", _with(g["gemini"], ("parameters",), "object")),
        ],
        "bedrock": [
            ("a tool missing name", _without(g["bedrock"], "toolSpec", "name")),
            ("a name with a dot", _with(g["bedrock"], ("toolSpec", "name"), "fs.read")),
            ("a name longer than 64", _with(g["bedrock"], ("toolSpec", "name"), "n" * 65)),
            ("an empty description", _with(g["bedrock"], ("toolSpec", "description"), "")),
            ("an input schema with no member", _with(g["bedrock"], ("toolSpec", "inputSchema"), {})),
            ("an unknown field", _with(g["bedrock"], ("toolSpec", "parameters"), _obj())),
        ],
        "mcp": [
            ("a tool missing name", _without(g["mcp"], "name")),
            ("an input schema that is not an object schema", _with(g["mcp"], ("inputSchema",), {"type": "string"})),
            ("no inputSchema", _without(g["mcp"], "inputSchema")),
            ("an unknown field", _with(g["mcp"], ("parameters",), _obj())),
            ("an output schema that is not a JSON Schema", _with(g["mcp"], ("outputSchema", "properties"), 5)),
            ("annotations with a hint that is not a boolean", _with(g["mcp"], ("annotations", "readOnlyHint"), "yes")),
        ],
    }


def _turn(calls: list[tuple[str, str]], results: list[Any]) -> dict:
    return {
        "turn": 1,
        "calls": [{"id": i, "wire_name": n, "tool": n, "outcome": "ok"} for i, n in calls],
        "results": results,
    }


GOOD_RESULTS: dict[str, dict] = {
    "openai-chat": _turn([("call_1", "hello__greet")], [{"role": "tool", "tool_call_id": "call_1", "content": "Hello"}]),
    "openai-responses": _turn(
        [("call_1", "hello__greet")], [{"type": "function_call_output", "call_id": "call_1", "output": "Hello"}]
    ),
    "anthropic": _turn(
        [("toolu_1", "hello__greet")],
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Hello", "is_error": False}]}],
    ),
    "gemini": _turn(
        [("gemini-1", "hello__greet.x")],
        [{"role": "user", "parts": [{"functionResponse": {"name": "hello__greet.x", "response": {"output": "Hello"}}}]}],
    ),
    "bedrock": _turn(
        [("tooluse_1", "hello__greet")],
        [
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "Hello"}], "status": "success"}}],
            }
        ],
    ),
    "mcp": _turn(
        [("1", "hello__greet.x")],
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "content": [{"type": "text", "text": "Hello"}],
                    "structuredContent": {"greeting": "Hello"},
                    "isError": False,
                },
            }
        ],
    ),
}


def _result_with(provider: str, path: tuple, value: Any = None, remove: bool = False) -> dict:
    turn = json.loads(json.dumps(GOOD_RESULTS[provider]))
    r = turn["results"][0]
    turn["results"][0] = _without(r, *path) if remove else _with(r, path, value)
    return turn


def broken_results() -> dict[str, list[tuple[str, dict]]]:
    return {
        "openai-chat": [
            ("a message missing tool_call_id", _result_with("openai-chat", ("tool_call_id",), remove=True)),
            ("a role other than tool", _result_with("openai-chat", ("role",), "user")),
            ("content that is a number", _result_with("openai-chat", ("content",), 7)),
            ("content parts that are not text parts", _result_with("openai-chat", ("content",), [{"type": "image"}])),
            ("an unknown field", _result_with("openai-chat", ("name",), "hello__greet")),
        ],
        "openai-responses": [
            ("an item of another type", _result_with("openai-responses", ("type",), "function_call_result")),
            ("an output that is a number", _result_with("openai-responses", ("output",), 7)),
            ("no output", _result_with("openai-responses", ("output",), remove=True)),
            ("an unknown field", _result_with("openai-responses", ("is_error",), True)),
        ],
        "anthropic": [
            ("a message from the assistant", _result_with("anthropic", ("role",), "assistant")),
            ("a block missing tool_use_id", _result_with("anthropic", ("content", 0, "tool_use_id"), remove=True)),
            ("is_error that is a string", _result_with("anthropic", ("content", 0, "is_error"), "yes")),
            ("a block of another type", _result_with("anthropic", ("content", 0, "type"), "tool_response")),
            ("an unknown field in a block", _result_with("anthropic", ("content", 0, "status"), "ok")),
        ],
        "gemini": [
            ("a response that is not an object", _result_with("gemini", ("parts", 0, "functionResponse", "response"), "Hello")),
            ("a part with an unknown field", _result_with("gemini", ("parts", 0, "toolResult"), {})),
            ("a part that is not a FunctionResponse", _result_with("gemini", ("parts", 0), {"text": "Hello"})),
            ("a FunctionResponse with an unknown field", _result_with("gemini", ("parts", 0, "functionResponse", "isError"), True)),
            ("a role that is not a string", _result_with("gemini", ("role",), 1)),
        ],
        "bedrock": [
            ("a toolResult with a bad status", _result_with("bedrock", ("content", 0, "toolResult", "status"), "failed")),
            ("a toolResult missing toolUseId", _result_with("bedrock", ("content", 0, "toolResult", "toolUseId"), remove=True)),
            ("a content block whose text is a number", _result_with("bedrock", ("content", 0, "toolResult", "content", 0, "text"), 7)),
            ("an unknown field in a toolResult", _result_with("bedrock", ("content", 0, "toolResult", "isError"), True)),
            ("a bad role", _result_with("bedrock", ("role",), "tool")),
        ],
        "mcp": [
            (
                "a result without structuredContent for a tool with an outputSchema",
                _result_with("mcp", ("result", "structuredContent"), remove=True),
            ),
            ("structuredContent that does not match the outputSchema", _result_with("mcp", ("result", "structuredContent"), {"greeting": 7})),
            ("a result without content", _result_with("mcp", ("result", "content"), remove=True)),
            ("isError that is a string", _result_with("mcp", ("result", "isError"), "false")),
            ("a JSON-RPC version other than 2.0", _result_with("mcp", ("jsonrpc",), "1.0")),
            ("a content block of an unknown type", _result_with("mcp", ("result", "content", 0, "type"), "html")),
        ],
    }


def selftest() -> int:
    problems = []
    refused = accepted = 0
    mcp_tools = mcp_listing([{"definition": GOOD_DEFINITIONS["mcp"]}])
    for provider in PROVIDERS:
        tools = mcp_tools if provider == "mcp" else None
        lines, _ = definition_failures(provider, [{"name": "good", "definition": GOOD_DEFINITIONS[provider]}])
        if lines:
            problems += [f"selftest: {provider}: the well-formed definition was refused: {line}" for line in lines]
        else:
            accepted += 1
        lines, _ = result_failures(provider, [GOOD_RESULTS[provider]], tools)
        if lines:
            problems += [f"selftest: {provider}: the well-formed result was refused: {line}" for line in lines]
        else:
            accepted += 1
        for label, broken in broken_definitions()[provider]:
            lines, _ = definition_failures(provider, [{"name": label, "definition": broken}])
            if lines:
                refused += 1
                print(f"refused as it should be: {lines[0]}")
            else:
                problems.append(f"selftest: {provider}: a broken definition was accepted: {label}")
        for label, broken in broken_results()[provider]:
            lines, _ = result_failures(provider, [broken], tools)
            if lines:
                refused += 1
                print(f"refused as it should be: {provider} result ({label}): {lines[0]}")
            else:
                problems.append(f"selftest: {provider}: a broken result was accepted: {label}")
    for line in problems:
        print(line)
    print(f"selftest: {refused} broken shapes refused, {accepted} well-formed accepted, {len(problems)} problems")
    return 1 if problems else 0


# --- main --------------------------------------------------------------------

USAGE = (
    "usage: validate.py definitions PROVIDER FILE [--mcp-version V]\n"
    "       validate.py results PROVIDER FILE [--tools FILE] [--mcp-version V]\n"
    "       validate.py selftest\n"
    f"PROVIDER: {', '.join(PROVIDERS)}; FILE: JSON the CLI printed, - for standard input"
)


def load(path: str) -> Any:
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return json.loads(text)


def option(argv: list[str], flag: str) -> tuple[list[str], str | None]:
    """`argv` without `flag VALUE`, and VALUE (None when absent)."""
    if flag not in argv:
        return argv, None
    at = argv.index(flag)
    if at + 1 >= len(argv):
        raise ValueError(f"{flag} needs a value")
    return argv[:at] + argv[at + 2 :], argv[at + 1]


def main(argv: list[str]) -> int:
    global MCP_VERSION
    if argv == ["selftest"]:
        return selftest()
    try:
        argv, tools_file = option(argv, "--tools")
        argv, version = option(argv, "--mcp-version")
    except ValueError as e:
        print(f"validate.py: {e}\n{USAGE}", file=sys.stderr)
        return 2
    if version is not None:
        from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

        if version not in KNOWN_PROTOCOL_VERSIONS:
            print(f"validate.py: --mcp-version: one of {', '.join(KNOWN_PROTOCOL_VERSIONS)}", file=sys.stderr)
            return 2
        MCP_VERSION = version
    if len(argv) != 3 or argv[0] not in ("definitions", "results") or argv[1] not in PROVIDERS:
        print(USAGE, file=sys.stderr)
        return 2
    command, provider, path = argv
    if tools_file is not None and (command != "results" or provider != "mcp"):
        print("validate.py: --tools is for `results mcp`", file=sys.stderr)
        return 2
    try:
        data = load(path)
        if command == "definitions":
            lines, passed = definition_failures(provider, entries_of(data))
            what = "definitions"
        else:
            tools = mcp_listing(entries_of(load(tools_file))) if tools_file is not None else None
            lines, passed = result_failures(provider, turns_of(data), tools)
            what = "results"
    except (OSError, ValueError) as e:
        print(f"validate.py: {e}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    print(f"{provider}: {passed} {what} passed, {len(lines)} failures", file=sys.stderr)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
