import { describe, expect, it } from "vitest";
import { call, callTool, newTenant, type TestTenant } from "./helpers";

// The backend of Anthropic's memory tool (memory_20250818) through the real route: each command's answer as
// the tool documents it (and as the Anthropic SDK's filesystem implementation words it), and each error.

const out = async (t: TestTenant, tool: string, args: Record<string, unknown>) =>
  (await call<{ output: string }>(t.apiKey, `memory_files_${tool}`, args)).output;
async function refused(t: TestTenant, tool: string, args: Record<string, unknown>) {
  const response = await callTool(t.apiKey, `memory_files_${tool}`, args);
  expect(response.error, JSON.stringify(response.result)).toBeDefined();
  return {
    code: response.error!.data?.code as string,
    message: response.error!.message,
    parameter: response.error!.data?.details?.parameter as string | undefined,
  };
}

describe("view", () => {
  it("lists /memories two levels deep with sizes (directories sized by their files, hidden items left out), even when empty", async () => {
    const t = await newTenant();
    expect(await out(t, "view", { path: "/memories" })).toBe(
      "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories",
    );
    await out(t, "create", { path: "/memories/notes.md", file_text: "x".repeat(1536) });
    await out(t, "create", { path: "/memories/projects/alpha/plan.md", file_text: "Plan" });
    await out(t, "create", { path: "/memories/projects/beta.md", file_text: "Beta!" });
    await out(t, "create", { path: "/memories/.secret", file_text: "hidden" });
    expect(await out(t, "view", { path: "/memories" })).toBe(
      [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:",
        "1.5K\t/memories",
        "1.5K\t/memories/notes.md",
        "9B\t/memories/projects/",
        "4B\t/memories/projects/alpha/",
        "5B\t/memories/projects/beta.md",
      ].join("\n"),
    );
    expect(await out(t, "view", { path: "/memories/projects/" })).toContain("4B\t/memories/projects/alpha/plan.md");
  });

  it("shows a file with 6-wide line numbers, whole or a view_range (end -1 = to the end)", async () => {
    const t = await newTenant();
    await out(t, "create", { path: "/memories/todo.txt", file_text: "one\ntwo\nthree\nfour" });
    expect(await out(t, "view", { path: "/memories/todo.txt" })).toBe(
      "Here's the content of /memories/todo.txt with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour",
    );
    expect(await out(t, "view", { path: "/memories/todo.txt", view_range: [2, 3] })).toBe(
      "Here's the content of /memories/todo.txt with line numbers:\n     2\ttwo\n     3\tthree",
    );
    expect(await out(t, "view", { path: "/memories/todo.txt", view_range: [3, -1] })).toBe(
      "Here's the content of /memories/todo.txt with line numbers:\n     3\tthree\n     4\tfour",
    );
    for (const range of [
      [0, 2],
      [3, 2],
      [2, 9],
      [5, -1],
    ])
      expect(await refused(t, "view", { path: "/memories/todo.txt", view_range: range })).toMatchObject({
        code: "INVALID_PARAMETER",
        parameter: "view_range",
      });
  });

  it("answers a missing path with the tool's words", async () => {
    const t = await newTenant();
    expect(await refused(t, "view", { path: "/memories/nope.md" })).toMatchObject({
      code: "NOT_FOUND",
      message: "The path /memories/nope.md does not exist. Please provide a valid path.",
    });
  });
});

describe("create", () => {
  it("creates a file, and refuses an existing file, a directory, a path below a file and an empty text", async () => {
    const t = await newTenant();
    expect(await out(t, "create", { path: "/memories/a/b.md", file_text: "B" })).toBe(
      "File created successfully at: /memories/a/b.md",
    );
    expect(await refused(t, "create", { path: "/memories/a/b.md", file_text: "again" })).toMatchObject({
      code: "CONFLICT",
      message: "File /memories/a/b.md already exists",
    });
    expect(await refused(t, "create", { path: "/memories/a", file_text: "x" })).toMatchObject({
      code: "CONFLICT",
      message: "The path /memories/a is a directory",
    });
    expect(await refused(t, "create", { path: "/memories/a/b.md/c", file_text: "x" })).toMatchObject({
      code: "CONFLICT",
      message: "/memories/a/b.md is a file, so /memories/a/b.md/c cannot be created below it",
    });
    expect(await refused(t, "create", { path: "/memories/empty.md", file_text: "" })).toMatchObject({
      code: "INVALID_PARAMETER",
      parameter: "file_text",
    });
    expect(await out(t, "view", { path: "/memories/a/b.md" })).toContain("     1\tB");
  });
});

describe("str_replace", () => {
  it("replaces the one occurrence, shows the lines around it, and keeps the old text as history", async () => {
    const t = await newTenant();
    await out(t, "create", {
      path: "/memories/prefs.md",
      file_text: "# Preferences\nTheme: dark\nFavorite color: blue\nEditor: vim\nShell: zsh",
    });
    expect(
      await out(t, "str_replace", {
        path: "/memories/prefs.md",
        old_str: "Favorite color: blue",
        new_str: "Favorite color: green",
      }),
    ).toBe(
      "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t# Preferences\n     2\tTheme: dark\n     3\tFavorite color: green\n     4\tEditor: vim\n     5\tShell: zsh",
    );
    // The file is a keyed memory: memory_get shows its versions, the current one first.
    const history = await call<{ content: string; versions: { content: string }[] }>(t.apiKey, "memory_get", {
      key: "/memories/prefs.md",
      include_history: true,
    });
    expect(history.content).toContain("Favorite color: green");
    expect(history.versions.map((v) => v.content.includes("blue"))).toEqual([false, true]);
    // new_str left out deletes old_str
    await out(t, "str_replace", { path: "/memories/prefs.md", old_str: "\nShell: zsh" });
    expect(await out(t, "view", { path: "/memories/prefs.md" })).not.toContain("zsh");
  });

  it("refuses no match, several matches (naming their lines), a directory and a missing file", async () => {
    const t = await newTenant();
    await out(t, "create", { path: "/memories/d/log.md", file_text: "ok\nerror here\nok\nerror again" });
    expect(
      await refused(t, "str_replace", { path: "/memories/d/log.md", old_str: "absent", new_str: "x" }),
    ).toMatchObject({
      code: "INVALID_PARAMETER",
      message: "No replacement was performed, old_str `absent` did not appear verbatim in /memories/d/log.md.",
    });
    expect(
      await refused(t, "str_replace", { path: "/memories/d/log.md", old_str: "error", new_str: "x" }),
    ).toMatchObject({
      message:
        "No replacement was performed. Multiple occurrences of old_str `error` in lines: 2, 4. Please ensure it is unique",
    });
    expect(await refused(t, "str_replace", { path: "/memories/d", old_str: "ok", new_str: "x" })).toMatchObject({
      message: "The path /memories/d is not a file.",
    });
    expect(await refused(t, "str_replace", { path: "/memories/none.md", old_str: "ok", new_str: "x" })).toMatchObject({
      code: "NOT_FOUND",
    });
    expect(await out(t, "view", { path: "/memories/d/log.md" })).toContain("error here"); // nothing changed
  });
});

describe("insert", () => {
  it("inserts after a line (0 = start, the line count = end) and refuses a line past the end", async () => {
    const t = await newTenant();
    await out(t, "create", { path: "/memories/list.md", file_text: "b\nc" });
    expect(await out(t, "insert", { path: "/memories/list.md", insert_line: 0, insert_text: "a\n" })).toBe(
      "The file /memories/list.md has been edited.",
    );
    await out(t, "insert", { path: "/memories/list.md", insert_line: 3, insert_text: "d" });
    await out(t, "insert", { path: "/memories/list.md", insert_line: 2, insert_text: "b2" });
    expect(await out(t, "view", { path: "/memories/list.md" })).toBe(
      "Here's the content of /memories/list.md with line numbers:\n     1\ta\n     2\tb\n     3\tb2\n     4\tc\n     5\td",
    );
    expect(await refused(t, "insert", { path: "/memories/list.md", insert_line: 6, insert_text: "x" })).toMatchObject({
      code: "INVALID_PARAMETER",
      parameter: "insert_line",
      message: "Invalid `insert_line` parameter: 6. It should be within the range of lines of the file: [0, 5]",
    });
  });
});

describe("delete", () => {
  it("deletes a file, or a directory with all it holds; refuses /memories itself and a missing path", async () => {
    const t = await newTenant();
    for (const path of ["/memories/keep.md", "/memories/old/a.md", "/memories/old/deep/b.md"])
      await out(t, "create", { path, file_text: `text of ${path}` });
    await out(t, "str_replace", { path: "/memories/old/a.md", old_str: "text", new_str: "edited text" }); // a history version too
    expect(await out(t, "delete", { path: "/memories/old" })).toBe("Successfully deleted /memories/old");
    expect(await out(t, "view", { path: "/memories" })).not.toContain("old");
    expect(await refused(t, "view", { path: "/memories/old/a.md" })).toMatchObject({ code: "NOT_FOUND" });
    expect(
      (await call<{ results: unknown[] }>(t.apiKey, "search", { query: "edited text", project: "default" })).results,
    ).toEqual([]);
    expect(await out(t, "delete", { path: "/memories/keep.md" })).toBe("Successfully deleted /memories/keep.md");
    expect(await refused(t, "delete", { path: "/memories" })).toMatchObject({
      message: "Cannot delete the /memories directory itself",
    });
    expect(await refused(t, "delete", { path: "/memories/keep.md" })).toMatchObject({
      code: "NOT_FOUND",
      message: "The path /memories/keep.md does not exist",
    });
  });
});

describe("rename", () => {
  it("moves a file or a directory where nothing is, and search finds it by its new path", async () => {
    const t = await newTenant();
    await out(t, "create", {
      path: "/memories/draft.md",
      file_text: "The quarterly lighthouse inspection is due in May.",
    });
    await out(t, "create", { path: "/memories/team/alice.md", file_text: "Alice prefers async standups." });
    expect(await out(t, "rename", { old_path: "/memories/draft.md", new_path: "/memories/final/inspection.md" })).toBe(
      "Successfully renamed /memories/draft.md to /memories/final/inspection.md",
    );
    expect(await out(t, "view", { path: "/memories/final/inspection.md" })).toContain("lighthouse inspection");
    expect(await refused(t, "view", { path: "/memories/draft.md" })).toMatchObject({ code: "NOT_FOUND" });
    await out(t, "rename", { old_path: "/memories/team", new_path: "/memories/people" });
    expect(await out(t, "view", { path: "/memories/people/alice.md" })).toContain("async standups");
    // The path is indexed with the text: the new one finds it, the old one no longer does.
    const found = await call<{ results: { content: string }[] }>(t.apiKey, "search", {
      query: "inspection final",
      project: "default",
      mode: "keyword",
    });
    expect(found.results.map((r) => r.content)).toContain("The quarterly lighthouse inspection is due in May.");
    expect(
      (await call<{ results: unknown[] }>(t.apiKey, "search", { query: "draft", project: "default", mode: "keyword" }))
        .results,
    ).toEqual([]);
  });

  it("refuses an existing destination, a move into itself, /memories and a missing source", async () => {
    const t = await newTenant();
    await out(t, "create", { path: "/memories/a.md", file_text: "A" });
    await out(t, "create", { path: "/memories/b.md", file_text: "B" });
    await out(t, "create", { path: "/memories/dir/c.md", file_text: "C" });
    expect(await refused(t, "rename", { old_path: "/memories/a.md", new_path: "/memories/b.md" })).toMatchObject({
      code: "CONFLICT",
      message: "The destination /memories/b.md already exists",
    });
    expect(await refused(t, "rename", { old_path: "/memories/a.md", new_path: "/memories/dir" })).toMatchObject({
      code: "CONFLICT",
    });
    expect(await refused(t, "rename", { old_path: "/memories/dir", new_path: "/memories/dir/sub" })).toMatchObject({
      code: "INVALID_PARAMETER",
      parameter: "new_path",
    });
    expect(await refused(t, "rename", { old_path: "/memories", new_path: "/memories/x" })).toMatchObject({
      message: "Cannot rename the /memories directory",
    });
    expect(await refused(t, "rename", { old_path: "/memories/zz.md", new_path: "/memories/yy.md" })).toMatchObject({
      code: "NOT_FOUND",
      message: "The path /memories/zz.md does not exist",
    });
    expect(await out(t, "view", { path: "/memories/b.md" })).toContain("     1\tB"); // untouched
  });
});

describe("paths, namespaces and tenants", () => {
  it("refuses every path outside /memories or with a traversal, naming the parameter", async () => {
    const t = await newTenant();
    const bad = [
      "/etc/passwd",
      "/memoriesX/a.md",
      "memories/a.md",
      "/memories/../secrets.env",
      "/memories/a/../../b",
      "/memories/./a.md",
      "/memories//a.md",
      "/memories/%2e%2e/x",
      "/memories/a\\..\\b",
      "/memories/a\u0000b",
    ];
    for (const path of bad) {
      expect(await refused(t, "view", { path }), path).toMatchObject({ code: "INVALID_PARAMETER", parameter: "path" });
      expect(await refused(t, "create", { path, file_text: "x" }), path).toMatchObject({
        code: "INVALID_PARAMETER",
        parameter: "path",
      });
    }
    expect(await refused(t, "rename", { old_path: "/memories/a.md", new_path: "/tmp/a.md" })).toMatchObject({
      parameter: "new_path",
    });
    expect(await out(t, "view", { path: "/memories" })).toContain("0B\t/memories"); // nothing was written
  });

  it("keeps files per namespace and per tenant, and a project-limited key to its projects", async () => {
    const t = await newTenant();
    await out(t, "create", { path: "/memories/shared.md", file_text: "In namespace work", namespace: "work" });
    expect(await out(t, "view", { path: "/memories" })).toContain("0B\t/memories");
    expect(await out(t, "view", { path: "/memories/shared.md", namespace: "work" })).toContain("In namespace work");
    const other = await newTenant();
    expect(await refused(other, "view", { path: "/memories/shared.md", namespace: "work" })).toMatchObject({
      code: "NOT_FOUND",
    });
    const limited = await newTenant({ projects: ["home"] });
    expect(
      await refused(limited, "create", { path: "/memories/x.md", file_text: "x", namespace: "work" }),
    ).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(await out(limited, "create", { path: "/memories/x.md", file_text: "x", namespace: "home" })).toBe(
      "File created successfully at: /memories/x.md",
    );
  });

  it("makes a file searchable like any memory", async () => {
    const t = await newTenant();
    await out(t, "create", {
      path: "/memories/customers/acme.md",
      file_text: "Acme Corp prefers email follow-ups over phone calls.",
    });
    const found = await call<{ results: { content: string; item_id: string }[] }>(t.apiKey, "search", {
      query: "How does Acme like to be followed up?",
      project: "default",
    });
    expect(found.results[0]?.content).toBe("Acme Corp prefers email follow-ups over phone calls.");
  });
});
