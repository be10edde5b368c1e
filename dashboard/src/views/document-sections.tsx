import { callTool, type Session } from "../api";
import { countOf, ErrorNote, formatDate, formatNumber, Loading, Tags, useAsync } from "../ui";

// One document opened in the list: what memory_get_document says of it, and its sections, each with its heading path,
// the page it starts on (PDF) and its tokens and chunks.

interface DocumentDetail {
  document_id: string;
  document_key: string | null;
  sha256: string;
  tags: string[];
  sections: { section: string; page: number | null; tokens: number; chunks: number }[];
  chunks: number;
  extract: boolean;
  extracted_chunks: number;
  updated_at: string;
}

export function DocumentSections({ session, id }: { session: Session; id: string }) {
  const detail = useAsync(
    () => callTool<DocumentDetail>(session.key, "memory_get_document", { document_id: id }),
    [session.key, id],
  );
  if (detail.error) return <ErrorNote error={detail.error} />;
  if (!detail.data) return <Loading when={true} label="Loading sections…" />;
  const d = detail.data;
  const paged = d.sections.some((s) => s.page !== null);
  return (
    <div class="document-detail">
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{d.document_id}</code>
        </dd>
        {d.document_key && (
          <>
            <dt>Key</dt>
            <dd>{d.document_key}</dd>
          </>
        )}
        <dt>Tags</dt>
        <dd>
          <Tags tags={d.tags} />
        </dd>
        <dt>Memories</dt>
        <dd>{memoriesOf(d)}</dd>
        <dt>Updated</dt>
        <dd>{formatDate(d.updated_at)}</dd>
        <dt>SHA-256</dt>
        <dd>
          <code>{d.sha256}</code>
        </dd>
      </dl>
      <div class="table-scroll">
        <table class="grid" aria-label="Sections">
          <thead>
            <tr>
              <th scope="col">Section</th>
              {paged && <th scope="col">Page</th>}
              <th scope="col">Tokens</th>
              <th scope="col">Chunks</th>
            </tr>
          </thead>
          <tbody>
            {d.sections.map((s, i) => (
              <tr key={i}>
                <td>{s.section === "" ? <span class="muted">(before the first heading)</span> : s.section}</td>
                {paged && <td class="nowrap">{s.page ?? "—"}</td>}
                <td>{formatNumber(s.tokens)}</td>
                <td>{formatNumber(s.chunks)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

/** How far extraction has read the document's chunks, when it was asked to. */
function memoriesOf(d: DocumentDetail): string {
  if (!d.extract) return "not extracted";
  if (d.extracted_chunks >= d.chunks) return `extracted (${countOf(d.chunks, "chunk")} read)`;
  return `being extracted (${formatNumber(d.extracted_chunks)} of ${countOf(d.chunks, "chunk")} read)`;
}
