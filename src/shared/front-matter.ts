/**
 * A Markdown file's front matter (Jekyll, Hugo, Docusaurus, Obsidian): YAML between `---` lines, or TOML between `+++`
 * lines, at the very start. Its top-level scalar fields are read (`title`, `description`...); lists and nested values
 * are skipped. Without a closing line within MAX_LINES, a leading `---` is a thematic break, not front matter.
 */
export interface FrontMatter {
  fields: Map<string, string>;
  /** The file after its front matter (the whole file when it has none). */
  body: string;
}

const MAX_LINES = 200;
const YAML_FIELD = /^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*$/;
const TOML_FIELD = /^([A-Za-z_][\w-]*)[ \t]*=[ \t]*(.*?)[ \t]*$/;

export function frontMatter(text: string): FrontMatter {
  const lines = text
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .split("\n");
  const fence = lines[0]?.trimEnd();
  const none = { fields: new Map<string, string>(), body: text };
  if (fence !== "---" && fence !== "+++") return none;
  const closers = fence === "---" ? ["---", "..."] : ["+++"];
  const end = lines.slice(1, MAX_LINES + 1).findIndex((line) => closers.includes(line.trimEnd()));
  if (end < 0) return none;
  const fields = new Map<string, string>();
  const pattern = fence === "---" ? YAML_FIELD : TOML_FIELD;
  for (const line of lines.slice(1, end + 1)) {
    const match = pattern.exec(line);
    if (!match) continue;
    const value = scalar(match[2]!);
    if (value !== null) fields.set(match[1]!.toLowerCase(), value);
  }
  return { fields, body: lines.slice(end + 2).join("\n") };
}

/** A value as written: quotes taken off; null for what is not one line of text (a list, a block, a table). */
function scalar(raw: string): string | null {
  const value = raw.replace(/[ \t]+#.*$/, "");
  if (value === "" || /^[[{|>]/.test(value)) return null;
  const quoted = /^(["'])(.*)\1$/.exec(value);
  return (quoted ? quoted[2]! : value).trim() || null;
}
