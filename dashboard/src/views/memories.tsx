import { useState } from "preact/hooks";
import { callAll, callTool, type Session } from "../api";
import { href } from "../router";
import { ErrorNote, formatDate, formatNumber, ITEM_TYPES, Loading, Section, splitList, Tags, useAsync } from "../ui";
import { KindBadge } from "./learned";

interface Filters {
  query: string;
  project: string;
  type: string;
  tags: string;
  from: string;
  to: string;
  stashed: boolean;
}

interface Row {
  id: string;
  project: string;
  type: string;
  kind: string;
  text: string;
  tags: string[] | null;
  tokens: number | null;
  importance: number | null;
  createdAt: string;
  score: number | null;
  /** A memory derived from a conversation: its kind (fact, preference, ...) and subject; null: stored as given. */
  memoryKind: string | null;
  subject: string | null;
}

const PAGE = 25;
const EMPTY: Filters = { query: "", project: "", type: "", tags: "", from: "", to: "", stashed: false };

/** The filter arguments both memory_list and search take. */
function filterArgs(f: Filters): Record<string, unknown> {
  const tags = splitList(f.tags);
  return {
    ...(f.project ? { project: f.project } : {}),
    ...(f.type ? { types: [f.type] } : {}),
    ...(tags.length > 0 ? { tags } : {}),
    ...(f.from ? { after: `${f.from}T00:00:00.000Z` } : {}),
    ...(f.to ? { before: `${f.to}T23:59:59.999Z` } : {}),
    include_stashed: f.stashed,
  };
}

/** Without a query: memory_list, newest first, paged. With one: the product's hybrid search, one row per item. */
async function loadRows(key: string, f: Filters, offset: number): Promise<{ rows: Row[]; total: number | null }> {
  if (f.query.trim() === "") {
    // biome-ignore lint/suspicious/noExplicitAny: the tool result as its output schema gives it; the fields read are checked there
    const page = await callTool<{ memories: any[]; total: number }>(key, "memory_list", {
      ...filterArgs(f),
      limit: PAGE,
      offset,
    });
    return {
      total: page.total,
      rows: page.memories.map((m) => ({
        id: m.id,
        project: m.project,
        type: m.type,
        kind: m.kind,
        text: m.preview + (m.truncated ? "…" : ""),
        tags: m.tags,
        tokens: m.tokens,
        importance: m.importance,
        createdAt: m.created_at,
        score: null,
        memoryKind: m.derived ? (m.memory_kind ?? null) : null,
        subject: m.derived ? (m.subject ?? null) : null,
      })),
    };
  }
  // biome-ignore lint/suspicious/noExplicitAny: the tool result as its output schema gives it; the fields read are checked there
  const found = await callTool<{ results: any[] }>(key, "search", { query: f.query, ...filterArgs(f), limit: 50 });
  const seen = new Set<string>();
  const rows: Row[] = [];
  for (const r of found.results) {
    if (seen.has(r.item_id)) continue;
    seen.add(r.item_id);
    rows.push({
      id: r.item_id,
      project: r.project,
      type: r.type,
      kind: r.kind,
      text: r.content,
      tags: null,
      tokens: null,
      importance: null,
      createdAt: r.timestamp,
      score: r.score,
      memoryKind: r.derived ? (r.memory_kind ?? null) : null,
      subject: r.derived ? (r.subject ?? null) : null,
    });
  }
  return { rows, total: null };
}

export function MemoriesView({ session }: { session: Session }) {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [applied, setApplied] = useState<Filters>(EMPTY);
  const [offset, setOffset] = useState(0);
  const projects = useAsync(
    () => callAll<[{ projects: string[] }]>(session.key, [{ name: "context_list_projects" }]).then(([p]) => p.projects),
    [session.key],
  );
  const rows = useAsync(() => loadRows(session.key, applied, offset), [session.key, applied, offset]);
  const set = (patch: Partial<Filters>) => setDraft((d) => ({ ...d, ...patch }));
  const projectOptions = [...new Set([...(projects.data ?? []), ...(session.projects ?? [])])].sort();

  return (
    <>
      <h1>Memories</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: a <search> element is not yet in every browser the dashboard supports */}
      <form
        role="search"
        class="filters"
        aria-label="Search and filter memories"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setApplied(draft);
        }}
      >
        <div class="field grow">
          <label for="f-query">Search</label>
          <input
            id="f-query"
            type="search"
            placeholder="Words or a question (hybrid search); empty lists newest first"
            value={draft.query}
            onInput={(e) => set({ query: e.currentTarget.value })}
          />
        </div>
        <div class="field">
          <label for="f-project">Project</label>
          <select id="f-project" value={draft.project} onChange={(e) => set({ project: e.currentTarget.value })}>
            <option value="">All projects</option>
            {projectOptions.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-type">Type</label>
          <select id="f-type" value={draft.type} onChange={(e) => set({ type: e.currentTarget.value })}>
            <option value="">Any type</option>
            {ITEM_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="f-tags">Tags (any of, comma-separated)</label>
          <input id="f-tags" type="text" value={draft.tags} onInput={(e) => set({ tags: e.currentTarget.value })} />
        </div>
        <div class="field">
          <label for="f-from">Created from</label>
          <input id="f-from" type="date" value={draft.from} onInput={(e) => set({ from: e.currentTarget.value })} />
        </div>
        <div class="field">
          <label for="f-to">Created to</label>
          <input id="f-to" type="date" value={draft.to} onInput={(e) => set({ to: e.currentTarget.value })} />
        </div>
        <div class="field check">
          <input
            id="f-stashed"
            type="checkbox"
            checked={draft.stashed}
            onChange={(e) => set({ stashed: e.currentTarget.checked })}
          />
          <label for="f-stashed">Include stashed</label>
        </div>
        <div class="field actions">
          <button type="submit" class="primary">
            {draft.query.trim() ? "Search" : "Apply filters"}
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(EMPTY);
              setApplied(EMPTY);
              setOffset(0);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <ErrorNote error={projects.error ?? rows.error} />
      <Section title={applied.query.trim() ? `Results for “${applied.query.trim()}”` : "Newest first"}>
        <Loading when={rows.loading} />
        {rows.data && rows.data.rows.length === 0 && (
          <p class="muted">{applied === EMPTY ? "Nothing stored yet." : "Nothing matches."}</p>
        )}
        {rows.data && (
          <ul class="rows" aria-label="Memories" aria-busy={rows.loading}>
            {rows.data.rows.map((r) => (
              <li key={r.id} class="row">
                <a class="row-text" href={href("memory", r.id)}>
                  {r.text}
                </a>
                <div class="meta">
                  {r.memoryKind && <KindBadge kind={r.memoryKind} />}
                  {r.subject && <span>about {r.subject}</span>}
                  <span>{r.project}</span>
                  <span>{r.type}</span>
                  {r.tokens !== null && <span>{formatNumber(r.tokens)} tokens</span>}
                  {r.importance !== null && <span>importance {formatNumber(r.importance)}</span>}
                  {r.score !== null && <span>score {formatNumber(r.score)}</span>}
                  <span>{formatDate(r.createdAt)}</span>
                  {r.tags && <Tags tags={r.tags} />}
                </div>
              </li>
            ))}
          </ul>
        )}
        {rows.data?.total != null && rows.data.total > PAGE && (
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Previous
            </button>
            <span>
              {offset + 1}–{Math.min(offset + PAGE, rows.data.total)} of {formatNumber(rows.data.total)}
            </span>
            <button type="button" disabled={offset + PAGE >= rows.data.total} onClick={() => setOffset(offset + PAGE)}>
              Next
            </button>
          </nav>
        )}
      </Section>
    </>
  );
}
