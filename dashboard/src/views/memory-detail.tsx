import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type ApiError, allows, callTool, type Session } from "../api";
import { href, navigate } from "../router";
import { Confirm, ErrorNote, formatDate, formatNumber, Loading, Section, splitList, Tags, useAsync } from "../ui";
import { type DerivedFields, KindBadge, LearnedSection } from "./learned";

export interface MemoryRecord extends DerivedFields {
  id: string;
  project: string;
  kind: string;
  type: string;
  content: string;
  tags: string[];
  importance: number;
  tokens: number;
  metadata: Record<string, unknown>;
  tier: string;
  pinned: boolean;
  conversation_id: string | null;
  role: string | null;
  file_path: string | null;
  chunk_count: number;
  /** The fact key it was stored or derived with; null: none. */
  key: string | null;
  /** The memory that replaced it under its key; null while it holds. */
  superseded_by: string | null;
  links: {
    direction: string;
    relationship_type: string;
    weight: number;
    other_id: string;
    other_type: string;
    other_preview: string;
    created_at: string;
  }[];
  history: {
    created_at: string;
    embedded_at: string | null;
    linked_at: string | null;
    last_touched_at: string;
    generation: string;
    gc_survival_count: number;
  };
}

/**
 * One memory whole: text, what was learned (a memory derived from a conversation), facts, links, history; edit tags
 * and importance, delete (write scope).
 */
export function MemoryDetail({ session, id }: { session: Session; id: string }) {
  const memory = useAsync(() => callTool<MemoryRecord>(session.key, "memory_get", { id }), [session.key, id]);
  const m = memory.data;
  return (
    <>
      <p>
        <a href={href("memories")}>← All memories</a>
      </p>
      <h1>Memory</h1>
      <Loading when={memory.loading && !m} />
      <ErrorNote error={memory.error} />
      {m && m.id === id && (
        <div class="detail">
          <MemoryBody
            memory={m}
            learned={m.derived ? <LearnedSection key={m.id} session={session} memory={m} /> : null}
          />
          {allows(session, "write") && <MemoryEdit session={session} memory={m} onSaved={memory.reload} />}
        </div>
      )}
    </>
  );
}

/** `learned`: shown beside the content (the derived memory's section). */
export function MemoryBody({
  memory: m,
  compact = false,
  learned,
}: {
  memory: MemoryRecord;
  compact?: boolean;
  learned?: ComponentChildren;
}) {
  return (
    <>
      <Section title="Content">
        <pre class="content" data-testid="memory-content">
          {m.content}
        </pre>
      </Section>
      {learned}
      <Section title="Facts">
        <dl class="facts">
          <dt>Id</dt>
          <dd>
            <code>{m.id}</code>
          </dd>
          <dt>Project</dt>
          <dd>{m.project}</dd>
          <dt>Kind / type</dt>
          <dd>
            {m.kind} / {m.type}
            {m.memory_kind && (
              <>
                {" "}
                <KindBadge kind={m.memory_kind} />
              </>
            )}
          </dd>
          <dt>Tags</dt>
          <dd>
            <Tags tags={m.tags} />
          </dd>
          <dt>Importance</dt>
          <dd>{formatNumber(m.importance)}</dd>
          <dt>Tokens</dt>
          <dd>
            {formatNumber(m.tokens)} in {m.chunk_count} chunk{m.chunk_count === 1 ? "" : "s"}
          </dd>
          <dt>Tier</dt>
          <dd>
            {m.tier}
            {m.pinned ? " · pinned" : ""}
          </dd>
          {m.conversation_id && (
            <>
              <dt>Conversation</dt>
              <dd>
                <a href={href("conversations", m.conversation_id)}>{m.conversation_id}</a>
                {m.role ? ` (${m.role})` : ""}
              </dd>
            </>
          )}
          {m.file_path && (
            <>
              <dt>File</dt>
              <dd>{m.file_path}</dd>
            </>
          )}
          {!compact && Object.keys(m.metadata).length > 0 && (
            <>
              <dt>Metadata</dt>
              <dd>
                <pre class="json">{JSON.stringify(m.metadata, null, 2)}</pre>
              </dd>
            </>
          )}
        </dl>
      </Section>
      <Section title={`Links (${m.links.length})`}>
        {m.links.length === 0 ? (
          <p class="muted">No links.</p>
        ) : compact ? (
          <ul class="plain">
            {m.links.map((l, i) => (
              <li key={i}>
                {l.direction === "outgoing" ? "→" : "←"} {l.relationship_type} ({formatNumber(l.weight)}):{" "}
                <a href={href("memory", l.other_id)}>{l.other_preview || l.other_id}</a>
              </li>
            ))}
          </ul>
        ) : (
          <table class="grid">
            <thead>
              <tr>
                <th scope="col">Direction</th>
                <th scope="col">Relationship</th>
                <th scope="col">Weight</th>
                <th scope="col">Other memory</th>
              </tr>
            </thead>
            <tbody>
              {m.links.map((l, i) => (
                <tr key={i}>
                  <td>{l.direction === "outgoing" ? "→ to" : "← from"}</td>
                  <td>{l.relationship_type}</td>
                  <td>{formatNumber(l.weight)}</td>
                  <td>
                    <a href={href("memory", l.other_id)}>{l.other_preview || l.other_id}</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      {!compact && (
        <Section title="History">
          <ol class="history">
            <li>Created {formatDate(m.history.created_at)}</li>
            <li>
              {m.history.embedded_at
                ? `Embedded for vector search ${formatDate(m.history.embedded_at)}`
                : "Embedding pending (found by keyword only until then)"}
            </li>
            <li>
              {m.history.linked_at
                ? `Auto-linked to similar memories ${formatDate(m.history.linked_at)}`
                : "Auto-linking pending"}
            </li>
            <li>Last touched {formatDate(m.history.last_touched_at)}</li>
            <li>
              GC generation {m.history.generation}, survived {m.history.gc_survival_count} GC cycle
              {m.history.gc_survival_count === 1 ? "" : "s"}
            </li>
          </ol>
        </Section>
      )}
    </>
  );
}

function MemoryEdit({ session, memory, onSaved }: { session: Session; memory: MemoryRecord; onSaved(): void }) {
  const [tags, setTags] = useState(memory.tags.join(", "));
  const [importance, setImportance] = useState(String(memory.importance));
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [confirming, setConfirming] = useState(false);
  useEffect(() => {
    setTags(memory.tags.join(", "));
    setImportance(String(memory.importance));
  }, [memory]);

  const save = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setStatus("Saving…");
    try {
      await callTool(session.key, "memory_update", {
        id: memory.id,
        tags: splitList(tags),
        importance: Number(importance),
      });
      setStatus("Saved.");
      onSaved();
    } catch (e) {
      setStatus(null);
      setError(e as ApiError);
    }
  };

  const remove = async () => {
    setConfirming(false);
    setError(null);
    try {
      const outcome = await callTool<{ pruned_segments: string[]; errors: { message: string }[] }>(
        session.key,
        "context_gc_prune",
        {
          project_id: memory.project,
          segment_ids: [memory.id],
          action: "delete",
          confirm: true,
        },
      );
      if (!outcome.pruned_segments.includes(memory.id))
        throw new Error(outcome.errors[0]?.message ?? "The memory was not deleted.");
      navigate("memories");
    } catch (e) {
      setError(e as ApiError);
    }
  };

  return (
    <Section title="Correct or forget">
      <form class="edit" onSubmit={save} aria-label="Edit tags and importance">
        <div class="field grow">
          <label for="edit-tags">Tags (comma-separated)</label>
          <input id="edit-tags" type="text" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="edit-importance">Importance (0–1)</label>
          <input
            id="edit-importance"
            type="number"
            min="0"
            max="1"
            step="0.05"
            required
            value={importance}
            onInput={(e) => setImportance(e.currentTarget.value)}
          />
        </div>
        <div class="field actions">
          <button type="submit" class="primary">
            Save changes
          </button>
          <button type="button" class="danger" onClick={() => setConfirming(true)}>
            Delete memory
          </button>
        </div>
      </form>
      <p role="status" class="muted">
        {status}
      </p>
      <ErrorNote error={error} />
      <Confirm
        open={confirming}
        title="Delete this memory?"
        body="It is removed for good, with its chunks, vectors, links and cached contexts. This cannot be undone."
        confirmLabel="Delete for good"
        onConfirm={remove}
        onCancel={() => setConfirming(false)}
      />
    </Section>
  );
}
