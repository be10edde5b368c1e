import { useEffect, useState } from "preact/hooks";
import { type ApiError, allows, callTool, type Session } from "../api";
import { Confirm, countOf, ErrorNote, formatBytes, formatDate, Loading, Section, useAsync } from "../ui";
import { DocumentSections } from "./document-sections";
import { UploadZone } from "./document-upload";
import "./documents.css";

// A project's documents (memory_list_documents): upload (write keys), each one's status and counts, its sections on
// opening it (memory_get_document), delete after confirming (write keys).

interface DocumentInfo {
  document_id: string;
  title: string;
  file_name: string | null;
  url: string | null;
  mime_type: string;
  bytes: number;
  pages: number | null;
  sections: number;
  chunks: number;
  tokens: number;
  status: "ready" | "converting" | "failed";
  error: string | null;
  created_at: string;
}

interface Page {
  documents: DocumentInfo[];
  next_cursor: string | null;
}

const PAGE = 50;

/** The projects offered: a limited key's own; else "default" (where uploads go unless told) and every stored one. */
function projectOptions(session: Session, stored: string[]): string[] {
  if (session.projects) return [...session.projects].sort();
  return [...new Set(["default", ...stored])].sort();
}

export function DocumentsView({ session }: { session: Session }) {
  const stored = useAsync(
    () => callTool<{ projects: string[] }>(session.key, "context_list_projects").then((r) => r.projects),
    [session.key],
  );
  const options = projectOptions(session, stored.data ?? []);
  const [chosen, setChosen] = useState<string | null>(null);
  const project = chosen ?? (options.includes("default") ? "default" : options[0]);
  return (
    <>
      <h1>Documents</h1>
      <ErrorNote error={stored.error} />
      <div class="field inline">
        <label for="doc-project">Project</label>
        <select id="doc-project" value={project} onChange={(e) => setChosen(e.currentTarget.value)}>
          {options.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </div>
      {project && <ProjectDocuments key={project} session={session} project={project} />}
    </>
  );
}

function ProjectDocuments({ session, project }: { session: Session; project: string }) {
  const canWrite = allows(session, "write");
  const list = (cursor: string | null) =>
    callTool<Page>(session.key, "memory_list_documents", {
      project_id: project,
      limit: PAGE,
      ...(cursor ? { cursor } : {}),
    });
  const first = useAsync(() => list(null), [session.key, project]);
  // Pages loaded past the first; a reload of the first page starts over from it.
  const [later, setLater] = useState<Page[]>([]);
  useEffect(() => setLater([]), [first.data]);
  const [open, setOpen] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<DocumentInfo | null>(null);
  const [error, setError] = useState<ApiError | null>(null);

  const pages = first.data ? [first.data, ...later] : [];
  const documents = pages.flatMap((p) => p.documents);
  const next = pages[pages.length - 1]?.next_cursor ?? null;
  // The button is off while a page loads, so a second click cannot fetch the same page again.
  const [loadingMore, setLoadingMore] = useState(false);
  const loadMore = () => {
    setLoadingMore(true);
    list(next)
      .then(
        (page) => setLater((l) => [...l, page]),
        (e: ApiError) => setError(e),
      )
      .finally(() => setLoadingMore(false));
  };
  const remove = async () => {
    const doc = deleting!;
    setDeleting(null);
    setError(null);
    try {
      await callTool(session.key, "memory_delete_document", { document_id: doc.document_id });
      first.reload();
    } catch (e) {
      setError(e as ApiError);
    }
  };

  return (
    <>
      {canWrite && <UploadZone session={session} project={project} onUploaded={first.reload} />}
      <Section title={`Documents in ${project}`}>
        <Loading when={first.loading && !first.data} />
        <ErrorNote error={first.error ?? error} />
        {first.data && documents.length === 0 && (
          <p class="muted">
            No documents in {project} yet.{canWrite ? " Drop a file above to add one." : ""}
          </p>
        )}
        {documents.length > 0 && (
          <ul class="rows" aria-label="Documents" aria-busy={first.loading}>
            {documents.map((d) => (
              <DocumentRow
                key={d.document_id}
                session={session}
                doc={d}
                open={open === d.document_id}
                onToggle={() => setOpen(open === d.document_id ? null : d.document_id)}
                onDelete={canWrite ? () => setDeleting(d) : null}
              />
            ))}
          </ul>
        )}
        {next && (
          <nav class="pager" aria-label="Pages">
            <button type="button" onClick={loadMore} disabled={loadingMore}>
              Show more documents
            </button>
          </nav>
        )}
      </Section>
      <Confirm
        open={deleting !== null}
        title="Delete this document?"
        body={
          deleting
            ? `“${deleting.title}” goes for good, with its ${countOf(deleting.chunks, "chunk")}, their vectors and links, memories derived only from it, and its stored original.`
            : ""
        }
        confirmLabel="Delete for good"
        onConfirm={remove}
        onCancel={() => setDeleting(null)}
      />
    </>
  );
}

function DocumentRow(props: {
  session: Session;
  doc: DocumentInfo;
  open: boolean;
  onToggle(): void;
  onDelete: (() => void) | null;
}) {
  const d = props.doc;
  const panel = `document-${d.document_id}`;
  return (
    <li class="row document-row">
      <div class="document-head">
        <button
          type="button"
          class="document-toggle"
          aria-expanded={props.open}
          aria-controls={props.open ? panel : undefined}
          onClick={props.onToggle}
        >
          <span aria-hidden="true" class="chevron">
            {props.open ? "▾" : "▸"}
          </span>
          {d.title}
        </button>
        <span class={`status status-${d.status}`}>{d.status}</span>
        {props.onDelete && (
          <button type="button" class="danger small-button" aria-label={`Delete ${d.title}`} onClick={props.onDelete}>
            Delete
          </button>
        )}
      </div>
      <div class="meta">
        <span>{d.file_name ?? d.url ?? "no file name"}</span>
        <span>{d.mime_type}</span>
        <span>{formatBytes(d.bytes)}</span>
        {d.pages !== null && <span>{countOf(d.pages, "page")}</span>}
        <span>{countOf(d.sections, "section")}</span>
        <span>{countOf(d.chunks, "chunk")}</span>
        <span>{countOf(d.tokens, "token")}</span>
        <span>{formatDate(d.created_at)}</span>
      </div>
      {d.error && <p class="error-text small">{d.error}</p>}
      {props.open && (
        <div id={panel}>
          <DocumentSections session={props.session} id={d.document_id} />
        </div>
      )}
    </li>
  );
}
