import { useState } from "preact/hooks";
import { allows, type CallOutcome, callTool, callTools, type Session } from "../api";
import { href } from "../router";
import { ErrorNote, formatDate, formatNumber, Loading, Section, useAsync } from "../ui";

// What extraction learned from conversations: a derived memory's kind, subject, validity and source turns, and
// the log of every decision about it (memory_history). Memories stored as given carry none of this.

/** The fields memory_get, memory_list and search add to a memory derived from conversation turns. */
export interface DerivedFields {
  derived?: boolean;
  memory_kind?: string;
  subject?: string;
  valid_from?: string | null;
  valid_to?: string | null;
  sources?: string[];
  said_by?: string;
  when_precision?: string;
}

/** One decision of the extraction log (memory_history). */
export interface HistoryEvent {
  event: string;
  memory_id: string | null;
  key: string | null;
  sources: string[];
  conversation_id: string | null;
  window: string | null;
  model: string | null;
  tokens_in: number | null;
  tokens_out: number | null;
  neurons: number | null;
  latency_ms: number | null;
  at: string;
  superseded_by: string | null;
  error?: string;
  reason?: string;
}

interface Turn {
  id: string;
  content: string;
  role: string | null;
  conversation_id: string | null;
  history: { created_at: string };
}

/** Source turns whose text is fetched (one memory_get each, in the same request as the history). */
const PREVIEWED_TURNS = 10;
const PREVIEW_CHARS = 160;

/** "fact", "preference", ...: marks a memory extraction derived, as against one stored as given. */
export function KindBadge({ kind }: { kind: string }) {
  return (
    <span class="badge" title="Learned from a conversation">
      {kind}
    </span>
  );
}

/** The start of an id (ids are UUIDs or hex hashes): enough to tell rows apart, the whole in the tooltip. */
function Short({ id }: { id: string }) {
  return (
    <code class="short-id" title={id}>
      {id.slice(0, 8)}
    </code>
  );
}

/**
 * An event's day (when it happened) is stored as 00:00 UTC: shown as that day, not as the evening before; a month or
 * a year given without its day, as that month or year.
 */
function formatValidity(iso: string, precision?: string): string {
  const utc = { timeZone: "UTC" } as const;
  if (precision === "year") return new Date(iso).toLocaleDateString(undefined, { year: "numeric", ...utc });
  if (precision === "month")
    return new Date(iso).toLocaleDateString(undefined, { year: "numeric", month: "long", ...utc });
  if (!iso.endsWith("T00:00:00.000Z")) return formatDate(iso);
  return new Date(iso).toLocaleDateString(undefined, { dateStyle: "medium", ...utc });
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS)}…` : flat;
}

/**
 * For a derived memory: what it is (kind, subject, when it holds), the turns it came from as links to their own
 * pages, and its extraction log. One request: memory_history and a memory_get per previewed turn.
 */
export function LearnedSection({
  session,
  memory,
}: {
  session: Session;
  memory: DerivedFields & { id: string; project: string; key?: string | null; superseded_by?: string | null };
}) {
  const sources = memory.sources ?? [];
  const previewed = sources.slice(0, PREVIEWED_TURNS);
  const data = useAsync(
    () =>
      callTools(session.key, [
        { name: "memory_history", args: { id: memory.id } },
        ...previewed.map((id) => ({ name: "memory_get", args: { id } })),
      ]),
    [session.key, memory.id, sources.join(",")],
  );
  const [history, ...turns] = data.data ?? [];
  const turnOf = new Map(
    turns.flatMap((t: CallOutcome, i) => (t.ok ? [[previewed[i]!, t.value as Turn] as const] : [])),
  );
  return (
    <Section title="Learned from the conversation">
      <dl class="facts">
        <dt>Kind</dt>
        <dd>{memory.memory_kind ? <KindBadge kind={memory.memory_kind} /> : "—"}</dd>
        <dt>Subject</dt>
        <dd>{memory.subject ?? "—"}</dd>
        {memory.said_by && (
          <>
            <dt>Said by</dt>
            <dd>the {memory.said_by}, not the user</dd>
          </>
        )}
        {memory.key && (
          <>
            <dt>Key</dt>
            <dd>
              <code>{memory.key}</code>
            </dd>
          </>
        )}
        <dt>Valid from</dt>
        <dd>{memory.valid_from ? formatValidity(memory.valid_from, memory.when_precision) : "—"}</dd>
        <dt>Valid to</dt>
        <dd>
          {memory.valid_to ? (
            <>
              {formatValidity(memory.valid_to)}
              {memory.superseded_by && (
                <>
                  {" "}
                  (replaced by <a href={href("memory", memory.superseded_by)}>a newer memory</a>)
                </>
              )}
            </>
          ) : (
            "holds now"
          )}
        </dd>
        <dt>Source turns</dt>
        <dd>
          {sources.length === 0 ? (
            <span class="muted">none recorded</span>
          ) : (
            <ul class="plain" aria-label="Source turns">
              {sources.map((id) => {
                const turn = turnOf.get(id);
                return (
                  <li key={id}>
                    <a href={href("memory", id)}>{turn ? `“${preview(turn.content)}”` : <Short id={id} />}</a>
                    {turn && (
                      <span class="muted small">
                        {" "}
                        {turn.role ?? "turn"} · {formatDate(turn.history.created_at)}
                      </span>
                    )}
                  </li>
                );
              })}
            </ul>
          )}
        </dd>
      </dl>
      <h3 class="sub">Extraction log</h3>
      <Loading when={data.loading && !data.data} />
      <ErrorNote error={data.error ?? (history && !history.ok ? history.error : null)} />
      {history?.ok && <HistoryTable events={(history.value as { events: HistoryEvent[] }).events} />}
      <ExtractAgain
        session={session}
        project={memory.project}
        conversation={[...turnOf.values()][0]?.conversation_id ?? null}
      />
    </Section>
  );
}

/**
 * memory_reextract for the conversation the memory came from: after the model changed or a window failed, read it
 * again with the current model. An operator's action: the button shows for keys with the admin scope.
 */
function ExtractAgain({
  session,
  project,
  conversation,
}: {
  session: Session;
  project: string;
  conversation: string | null;
}) {
  const [state, setState] = useState<{ busy: boolean; done: string | null; error: Error | null }>({
    busy: false,
    done: null,
    error: null,
  });
  if (conversation === null || !allows(session, "admin")) return null;
  const run = async () => {
    setState({ busy: true, done: null, error: null });
    try {
      const answer = await callTool<{ turns: number }>(session.key, "memory_reextract", {
        project_id: project,
        conversation_id: conversation,
      });
      setState({
        busy: false,
        done: `Queued: its ${formatNumber(answer.turns)} turns will be read again.`,
        error: null,
      });
    } catch (error) {
      setState({ busy: false, done: null, error: error as Error });
    }
  };
  return (
    <p class="actions extract-again">
      <button type="button" onClick={run} disabled={state.busy}>
        Extract this conversation again
      </button>{" "}
      <span class="muted small">reads it again with the current model; what is known only gains sources</span>
      {state.done && (
        <span role="status" class="ok-text">
          {" "}
          {state.done}
        </span>
      )}
      <ErrorNote error={state.error} />
    </p>
  );
}

function HistoryTable({ events }: { events: HistoryEvent[] }) {
  if (events.length === 0) return <p class="muted">No decisions recorded for this memory.</p>;
  const anyError = events.some((e) => e.error);
  const anyReason = events.some((e) => e.reason);
  const count = (n: number | null) => (n === null ? "—" : formatNumber(n));
  return (
    <div class="table-scroll">
      <table class="grid" aria-label="Extraction log">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Model</th>
            <th scope="col">Tokens in / out</th>
            <th scope="col">Latency</th>
            <th scope="col">Window</th>
            <th scope="col">Superseded by</th>
            {anyReason && <th scope="col">Why</th>}
            {anyError && <th scope="col">Error</th>}
          </tr>
        </thead>
        <tbody>
          {events.map((e, i) => (
            <tr key={i}>
              <td class="nowrap">{formatDate(e.at)}</td>
              <td>
                <span class={`event event-${e.event}`}>{e.event}</span>
              </td>
              <td>{e.model ?? "—"}</td>
              <td class="nowrap">
                {count(e.tokens_in)} / {count(e.tokens_out)}
              </td>
              <td class="nowrap">{e.latency_ms === null ? "—" : `${formatNumber(e.latency_ms)} ms`}</td>
              <td>{e.window ? <Short id={e.window} /> : "—"}</td>
              <td>
                {e.superseded_by ? (
                  <a href={href("memory", e.superseded_by)}>
                    <Short id={e.superseded_by} />
                  </a>
                ) : (
                  "—"
                )}
              </td>
              {anyReason && <td>{e.reason ?? ""}</td>}
              {anyError && <td class="error-text">{e.error ?? ""}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
