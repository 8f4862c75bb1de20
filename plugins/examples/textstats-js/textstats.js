// textstats, in JavaScript: counts the words, lines and characters of a
// text and lists its most frequent terms. The same plugin is written in
// Rust and Python beside this one; all three register the definitions of
// ../textstats.json and answer ../textstats.cases.toml alike.
//
// Built with componentize-js (see ../build.sh): the world's exports are
// this module's `register` and `call`; an `err` is thrown as a plain
// object (`{ tag, val }` for a call-error).

// Whitespace is exactly these four characters; nothing else separates words.
const SPACE = new Set([" ", "\t", "\r", "\n"]);
// The 32 ASCII punctuation characters, stripped from the ends of a term.
const PUNCTUATION = new Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");
const NUL_REFUSED = "the text contains a NUL character (U+0000): remove it";

const HINTS = { readOnly: true, idempotent: true, destructive: false, openWorld: false };
const COUNT = { type: "integer", format: "uint", minimum: 0 };

const STATS = {
  name: "stats",
  description: "Counts the words, lines and characters of a text.",
  inputSchema: JSON.stringify({
    type: "object",
    properties: { text: { type: "string", description: "The text to measure." } },
    required: ["text"],
    additionalProperties: false,
  }),
  outputSchema: JSON.stringify({
    type: "object",
    properties: {
      words: { ...COUNT, description: "Runs of characters other than space, tab, carriage return and newline." },
      lines: { ...COUNT, description: "Newlines, plus one when the text does not end with one." },
      characters: { ...COUNT, description: "Unicode scalar values." },
    },
    required: ["words", "lines", "characters"],
    additionalProperties: false,
  }),
  annotations: HINTS,
};

const TOP_TERMS = {
  name: "top_terms",
  description: "Lists the most frequent terms of a text, most frequent first.",
  inputSchema: JSON.stringify({
    type: "object",
    properties: {
      text: { type: "string", description: "The text to read." },
      limit: {
        type: "integer", format: "uint32", minimum: 1, maximum: 100, default: 10,
        description: "The most terms to return.",
      },
    },
    required: ["text"],
    additionalProperties: false,
  }),
  outputSchema: JSON.stringify({
    type: "object",
    properties: {
      terms: {
        type: "array",
        description: "Most frequent first; equal counts in code point order.",
        items: {
          type: "object",
          properties: { term: { type: "string" }, count: COUNT },
          required: ["term", "count"],
          additionalProperties: false,
        },
      },
    },
    required: ["terms"],
    additionalProperties: false,
  }),
  annotations: HINTS,
};

// The words of `text`, as arrays of code points.
function words(text) {
  const found = [];
  let current = [];
  for (const c of text) {
    if (SPACE.has(c)) {
      if (current.length) found.push(current);
      current = [];
    } else {
      current.push(c);
    }
  }
  if (current.length) found.push(current);
  return found;
}

function stats(text) {
  let newlines = 0;
  let characters = 0;
  for (const c of text) {
    characters += 1;
    if (c === "\n") newlines += 1;
  }
  const lines = newlines + (text.length > 0 && !text.endsWith("\n") ? 1 : 0);
  return { words: words(text).length, lines, characters };
}

function lowerAscii(c) {
  return c >= "A" && c <= "Z" ? String.fromCharCode(c.charCodeAt(0) + 32) : c;
}

// Compares by code point (JavaScript's own `<` compares UTF-16 units,
// which orders characters beyond U+FFFF wrongly).
function byCodePoint(a, b) {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function topTerms(text, limit) {
  const counts = new Map();
  for (const chars of words(text)) {
    let start = 0;
    let end = chars.length;
    while (start < end && PUNCTUATION.has(chars[start])) start += 1;
    while (end > start && PUNCTUATION.has(chars[end - 1])) end -= 1;
    const term = chars.slice(start, end).map(lowerAscii).join("");
    if (term) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || byCodePoint(a[0], b[0]));
  return { terms: ranked.slice(0, limit).map(([term, count]) => ({ term, count })) };
}

function json(value) {
  const part = { mediaType: "application/json", data: JSON.stringify(value) };
  return { content: [{ tag: "json", val: part }], isError: false };
}

export function register(_config) {
  return { servers: [{ name: "textstats", tools: [STATS, TOP_TERMS] }], mcpSources: [] };
}

export function call(_config, server, tool, argumentsJson) {
  const args = JSON.parse(argumentsJson);
  const text = args.text;
  if (text.includes("\0")) throw { tag: "invalid-arguments", val: NUL_REFUSED };
  if (server === "textstats" && tool === "stats") return json(stats(text));
  if (server === "textstats" && tool === "top_terms") return json(topTerms(text, args.limit ?? 10));
  throw { tag: "unknown-tool", val: `textstats has no tool ${server}.${tool}` };
}
