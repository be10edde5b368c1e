// Answers as smaller and local models write them when asked for JSON, for the noisy test model
// (test/fakes/noisy-model.ts) and the bench's oracle (oracle-observations.mjs): Python's repr, JavaScript with comments
// and unquoted keys, one object per line, the object inside another under other names, line breaks inside strings.

/** Each writer takes the memories and gives the answer's text. */
export const SYNTAX_SLIPS = {
  python: (memories) => python({ memories }),
  javascript: (memories) =>
    `{memories: [\n${memories.map((m, i) => `  // memory ${i + 1}\n  {${javascriptFields(m)}},`).join("\n")}\n]}`,
  lines: (memories) => memories.map((m) => JSON.stringify(m)).join("\n"),
  nested: (memories) => JSON.stringify({ response: { Memories: memories } }),
  "line breaks": (memories) =>
    JSON.stringify({ memories: memories.map((m) => ({ ...m, text: String(m.text).replace(/ /g, "\n") })) }).replace(
      /\\n/g,
      "\n",
    ),
};

function javascriptFields(memory) {
  return Object.entries(memory)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(", ");
}

/** A value as Python's repr writes it: single quotes unless the string holds one, None, True and False. */
function python(value) {
  if (value === null || value === undefined) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "string") return value.includes("'") ? JSON.stringify(value) : `'${value}'`;
  if (Array.isArray(value)) return `[${value.map(python).join(", ")}]`;
  if (typeof value === "object")
    return `{${Object.entries(value)
      .map(([k, v]) => `'${k}': ${python(v)}`)
      .join(", ")}}`;
  return String(value);
}
