"""textstats, in Python: counts the words, lines and characters of a text
and lists its most frequent terms. The same plugin is written in Rust and
JavaScript beside this one; all three register the definitions of
../textstats.json and answer ../textstats.cases.toml alike.

Built with componentize-py (see ../build.sh):
    componentize-py -d ../../../wit -w plugin componentize textstats -o textstats-python.wasm
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import types

# Whitespace is exactly these four characters; nothing else separates words.
SPACE = " \t\r\n"
# The 32 ASCII punctuation characters, stripped from the ends of a term.
PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
NUL_REFUSED = "the text contains a NUL character (U+0000): remove it"

HINTS = types.Annotations(read_only=True, idempotent=True, destructive=False, open_world=False)
COUNT = {"type": "integer", "format": "uint", "minimum": 0}


def _schema(value):
    return json.dumps(value, separators=(",", ":"))


STATS = types.ToolDefinition(
    name="stats",
    description="Counts the words, lines and characters of a text.",
    input_schema=_schema({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to measure."}},
        "required": ["text"],
        "additionalProperties": False,
    }),
    output_schema=_schema({
        "type": "object",
        "properties": {
            "words": dict(COUNT, description="Runs of characters other than space, tab, carriage return and newline."),
            "lines": dict(COUNT, description="Newlines, plus one when the text does not end with one."),
            "characters": dict(COUNT, description="Unicode scalar values."),
        },
        "required": ["words", "lines", "characters"],
        "additionalProperties": False,
    }),
    annotations=HINTS,
)

TOP_TERMS = types.ToolDefinition(
    name="top_terms",
    description="Lists the most frequent terms of a text, most frequent first.",
    input_schema=_schema({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The text to read."},
            "limit": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 100,
                      "default": 10, "description": "The most terms to return."},
        },
        "required": ["text"],
        "additionalProperties": False,
    }),
    output_schema=_schema({
        "type": "object",
        "properties": {
            "terms": {
                "type": "array",
                "description": "Most frequent first; equal counts in code point order.",
                "items": {
                    "type": "object",
                    "properties": {"term": {"type": "string"}, "count": COUNT},
                    "required": ["term", "count"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["terms"],
        "additionalProperties": False,
    }),
    annotations=HINTS,
)


def _words(text):
    words, current = [], []
    for c in text:
        if c in SPACE:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(c)
    if current:
        words.append("".join(current))
    return words


def _lower_ascii(term):
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in term)


def _stats(text):
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return {"words": len(_words(text)), "lines": lines, "characters": len(text)}


def _top_terms(text, limit):
    counts = {}
    for word in _words(text):
        term = _lower_ascii(word.strip(PUNCTUATION))
        if term:
            counts[term] = counts.get(term, 0) + 1
    # Python compares strings by code point, as the table requires.
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"terms": [{"term": t, "count": n} for t, n in ranked[:limit]]}


def _json(value):
    part = types.JsonData(media_type="application/json", data=json.dumps(value, ensure_ascii=False))
    return types.CallResult(content=[types.ContentPart_Json(part)], is_error=False)


class WitWorld(wit_world.WitWorld):
    def register(self, config: str) -> types.Registration:
        server = types.ServerDefinition(name="textstats", tools=[STATS, TOP_TERMS])
        return types.Registration(servers=[server], mcp_sources=[])

    def call(self, config: str, server: str, tool: str, arguments: str) -> types.CallResult:
        args = json.loads(arguments)
        text = args["text"]
        if "\0" in text:
            raise Err(types.CallError_InvalidArguments(NUL_REFUSED))
        if server == "textstats" and tool == "stats":
            return _json(_stats(text))
        if server == "textstats" and tool == "top_terms":
            return _json(_top_terms(text, args.get("limit", 10)))
        raise Err(types.CallError_UnknownTool(f"textstats has no tool {server}.{tool}"))
