/**
 * What D1 checks of a statement's text that local SQLite (miniflare's workerd) does not: the arguments of each
 * function call (D1 allows 32; local SQLite hundreds), read with a small SQLite tokenizer (comments, string
 * literals, quoted identifiers, parameters). src/db/checked-d1.ts refuses what D1 would refuse, in D1's words.
 * (LIKE and GLOB patterns need nothing here: workerd's SQLite refuses one over 50 bytes as D1 does.)
 */
export interface SqlScan {
  /** The function call with the most arguments, if any. */
  widestCall: { name: string; args: number } | null;
}

type Token =
  | { t: "word"; upper: string }
  | { t: "str" }
  | { t: "param" }
  | { t: "punct"; value: string }
  | { t: "other" };

/**
 * Words that take a parenthesis without being a function call: `IN (…)`, `VALUES (…)`, `EXISTS (…)`, `OVER (…)`,
 * a table's column list after INTO or TABLE, a CTE's after WITH, and operators before a parenthesized operand.
 */
const NOT_CALLS = new Set(
  (
    "ABORT ALL AND AS ASC BETWEEN BY CASE CAST CHECK COLLATE CONFLICT CONSTRAINT CROSS CURRENT DEFAULT DELETE DESC DISTINCT DO " +
    "ELSE END ESCAPE EXCEPT EXCLUDE EXISTS FAIL FILTER FOLLOWING FOREIGN FROM FULL GLOB GROUP GROUPS HAVING IGNORE IN INDEXED INNER " +
    "INSERT INTERSECT INTO IS ISNULL JOIN KEY LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NOT NOTNULL NULL NULLS OFFSET ON OR ORDER " +
    "OUTER OVER PARTITION PRECEDING PRIMARY RAISE RANGE RECURSIVE REFERENCES REGEXP RETURNING RIGHT ROLLBACK ROWS SELECT SET THEN " +
    "UNBOUNDED UNION UNIQUE UPDATE USING VALUES WHEN WHERE WINDOW WITH"
  ).split(" "),
);
/** After these a name and its parenthesis are a table or index and its columns, not a call. */
const TABLE_BEFORE = new Set(["INTO", "TABLE", "EXISTS", "VIEW", "INDEX", "REFERENCES", "TRIGGER"]);

const cache = new Map<string, SqlScan>();
const CACHE_SIZE = 2000;

/** The statement's scan (statements are mostly fixed text, so scans are cached by it). */
export function scanSql(sql: string): SqlScan {
  let scan = cache.get(sql);
  if (!scan) {
    scan = scan_(tokenize(sql));
    if (cache.size >= CACHE_SIZE) cache.clear();
    cache.set(sql, scan);
  }
  return scan;
}

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? n : end + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === "'") {
      let j = i + 1;
      while (j < n && !(sql[j] === "'" && sql[j + 1] !== "'")) j += sql[j] === "'" ? 2 : 1;
      tokens.push({ t: "str" });
      i = j + 1;
    } else if (c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      let j = i + 1;
      while (j < n && !(sql[j] === close && sql[j + 1] !== close)) j += sql[j] === close ? 2 : 1;
      tokens.push({ t: "other" }); // a quoted name: never a keyword, never called here
      i = j + 1;
    } else if (c === "?" || ((c === ":" || c === "@" || c === "$") && /[A-Za-z_]/.test(sql[i + 1] ?? ""))) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(sql[j]!)) j++;
      tokens.push({ t: "param" });
      i = j;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(sql[j]!)) j++;
      tokens.push({ t: "word", upper: sql.slice(i, j).toUpperCase() });
      i = j;
    } else if (/[0-9.]/.test(c) && (c !== "." || /[0-9]/.test(sql[i + 1] ?? ""))) {
      let j = i + 1;
      while (j < n && /[0-9A-Za-z_.]/.test(sql[j]!)) j++;
      tokens.push({ t: "other" });
      i = j;
    } else {
      tokens.push({ t: "punct", value: c });
      i++;
    }
  }
  return tokens;
}

const isPunct = (token: Token | undefined, value: string) => token?.t === "punct" && token.value === value;
const isWord = (token: Token | undefined, upper: string) => token?.t === "word" && token.upper === upper;
/** One pass over the tokens with a stack of open parentheses, each a call (with its name) or not. */
function scan_(tokens: Token[]): SqlScan {
  let widestCall: SqlScan["widestCall"] = null;
  const open: { name: string | null; commas: number; at: number }[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k]!;
    if (isPunct(token, "(")) {
      const word = tokens[k - 1];
      const before = tokens[k - 2];
      const call =
        word?.t === "word" &&
        !NOT_CALLS.has(word.upper) &&
        !(before?.t === "word" && TABLE_BEFORE.has(before.upper)) &&
        !isPunct(before, ".");
      open.push({ name: call ? word.upper.toLowerCase() : null, commas: 0, at: k });
    } else if (isPunct(token, ",")) {
      if (open.length > 0) open[open.length - 1]!.commas++;
    } else if (isPunct(token, ")")) {
      const frame = open.pop();
      if (!frame?.name) continue;
      // `name (columns) AS (…)`: a common table expression's column list, not a call.
      if (
        isWord(tokens[k + 1], "AS") &&
        (isPunct(tokens[k + 2], "(") || isWord(tokens[k + 2], "NOT") || isWord(tokens[k + 2], "MATERIALIZED"))
      )
        continue;
      const args = k === frame.at + 1 ? 0 : frame.commas + 1;
      if (!widestCall || args > widestCall.args) widestCall = { name: frame.name, args };
    }
  }
  return { widestCall };
}
