import { callAll, callTool, type Session } from "../api";
import { href } from "../router";
import { ErrorNote, formatDate, formatNumber, Loading, Section, Tags, useAsync } from "../ui";

interface Conversation {
  contextId: string;
  messages: { role: string; content: string; importance: string; tags: string[]; timestamp: number }[];
  summary: {
    version: number;
    summary: string;
    keyInsights: string[];
    messageCount: number;
    createdAt: number;
    importanceScore: number;
  } | null;
}

/** Conversations (most recent first); one conversation: its messages in order, latest summary, related contexts. */
export function ConversationsView({ session, id }: { session: Session; id: string | null }) {
  const list = useAsync(
    () => callTool<{ sessions: string[] }>(session.key, "visualize_context", {}).then((r) => r.sessions ?? []),
    [session.key],
  );
  return (
    <>
      <h1>Conversations</h1>
      <div class="split">
        <Section title="Conversations">
          <Loading when={list.loading} />
          <ErrorNote error={list.error} />
          {list.data && list.data.length === 0 && <p class="muted">No conversations yet.</p>}
          <ul class="plain" aria-label="Conversations, most recent first">
            {(list.data ?? []).map((c) => (
              <li key={c}>
                <a href={href("conversations", c)} aria-current={c === id ? "page" : undefined}>
                  {c}
                </a>
              </li>
            ))}
          </ul>
        </Section>
        <div>{id ? <ConversationDetail session={session} id={id} /> : <p class="muted">Choose a conversation.</p>}</div>
      </div>
    </>
  );
}

function ConversationDetail({ session, id }: { session: Session; id: string }) {
  const data = useAsync(
    () =>
      callAll<[Conversation, string[]]>(session.key, [
        { name: "retrieve_context", args: { contextId: id } },
        { name: "get_related_contexts", args: { contextId: id } },
      ]),
    [session.key, id],
  );
  if (data.error) return <ErrorNote error={data.error} />;
  if (!data.data) return <Loading when={true} />;
  const [conversation, related] = data.data;
  const summary = conversation.summary;
  return (
    <>
      <Section title={`Summary${summary ? ` (version ${summary.version})` : ""}`}>
        {summary ? (
          <>
            <p class="prose">{summary.summary}</p>
            {summary.keyInsights.length > 0 && (
              <ul aria-label="Key insights">
                {summary.keyInsights.map((k, i) => (
                  <li key={i}>{k}</li>
                ))}
              </ul>
            )}
            <p class="muted small">
              Covers {summary.messageCount} messages · importance {formatNumber(summary.importanceScore)} ·{" "}
              {formatDate(summary.createdAt)}
            </p>
          </>
        ) : (
          <p class="muted">Not summarized yet.</p>
        )}
      </Section>
      <Section title="Related contexts">
        {related.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <ul class="plain">
            {related.map((r) => (
              <li key={r}>
                <a href={href("conversations", r)}>{r}</a>
              </li>
            ))}
          </ul>
        )}
      </Section>
      <Section title={`Messages (${conversation.messages.length})`}>
        <ol class="messages">
          {conversation.messages.map((m, i) => (
            <li key={i} class={`message ${m.role}`}>
              <div class="meta">
                <strong>{m.role}</strong>
                <span>{formatDate(m.timestamp)}</span>
                <span>{m.importance.toLowerCase()}</span>
                {m.tags.length > 0 && <Tags tags={m.tags} />}
              </div>
              <p class="prose">{m.content}</p>
            </li>
          ))}
        </ol>
      </Section>
    </>
  );
}
