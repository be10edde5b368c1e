import { useEffect, useRef, useState } from "preact/hooks";
import { type ApiError, type Session, uploadDocument } from "../api";
import { countOf, formatBytes } from "../ui";

// Uploading documents: drop files on the zone, or choose them with the button (the keyboard's way in). Each file is
// sent on its own (POST /documents), one after another: the server converts it within the request, so parallel
// uploads would only queue there. Each file's line says what happened, with the server's own words when it refuses.

interface Ingested {
  document_id: string;
  /** converting: a large file converts in the background; the list shows when it is ready. */
  status: "ready" | "converting";
  title: string;
  sections: number;
  chunks: number;
  pages: number | null;
  unchanged: boolean;
  /** queued: memories are extracted from it in the background; off: not asked, or the server has no model. */
  extraction: "queued" | "off";
}

interface Upload {
  id: number;
  name: string;
  bytes: number;
  state: "waiting" | "uploading" | "done" | "failed";
  /** Memories were asked to be extracted from it. */
  extract: boolean;
  result?: Ingested;
  error?: string;
}

let nextUpload = 0;

export function UploadZone({
  session,
  project,
  onUploaded,
}: {
  session: Session;
  project: string;
  onUploaded(): void;
}) {
  const input = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [extract, setExtract] = useState(false);
  const update = (id: number, patch: Partial<Upload>) =>
    setUploads((all) => all.map((u) => (u.id === id ? { ...u, ...patch } : u)));

  // A file dropped beside the zone would make the browser open it in place of the dashboard: refused instead (no copy
  // cursor). The zone's own handlers run first and have already prevented the default.
  useEffect(() => {
    const refuse = (e: DragEvent) => {
      if (e.defaultPrevented || !e.dataTransfer?.types.includes("Files")) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "none";
    };
    addEventListener("dragover", refuse);
    addEventListener("drop", refuse);
    return () => {
      removeEventListener("dragover", refuse);
      removeEventListener("drop", refuse);
    };
  }, []);

  // One upload at a time, across drops too: each file waits for the one before it.
  const chain = useRef<Promise<void>>(Promise.resolve());
  const send = (files: File[]) => {
    const queued = files.map((f) => ({
      id: nextUpload++,
      name: f.name,
      bytes: f.size,
      state: "waiting" as const,
      extract,
    }));
    setUploads((all) => [...queued, ...all]);
    for (const [i, file] of files.entries()) {
      const { id } = queued[i]!;
      chain.current = chain.current.then(async () => {
        update(id, { state: "uploading" });
        try {
          const asked = queued[i]!.extract;
          update(id, { state: "done", result: await uploadDocument<Ingested>(session.key, project, file, asked) });
          onUploaded();
        } catch (error) {
          update(id, { state: "failed", error: (error as ApiError).message });
        }
      });
    }
  };

  return (
    <section class="card" aria-label="Upload documents">
      {/* biome-ignore lint/a11y/noStaticElementInteractions: the drop target is for the mouse; the button below is the keyboard's way */}
      <div
        class={`drop-zone${over ? " over" : ""}`}
        data-testid="drop-zone"
        onDragEnter={(e) => (e.preventDefault(), setOver(true))}
        onDragOver={(e) => {
          e.preventDefault();
          if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
        }}
        onDragLeave={(e) => {
          // Leaving for a child of the zone is not leaving the zone.
          if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setOver(false);
        }}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          send([...(e.dataTransfer?.files ?? [])]);
        }}
      >
        <p>
          <strong>Drop files here</strong> to add them to <strong>{project}</strong>
        </p>
        <p class="muted small">PDF, Word (.docx), Markdown, HTML, plain text or CSV</p>
        <button type="button" class="primary" onClick={() => input.current?.click()}>
          Choose files…
        </button>
        <input
          ref={input}
          type="file"
          multiple
          hidden
          aria-label="Files to upload"
          onChange={(e) => {
            const files = [...(e.currentTarget.files ?? [])];
            // Cleared so choosing the same file again uploads it again.
            e.currentTarget.value = "";
            send(files);
          }}
        />
      </div>
      <label class="extract-option">
        <input type="checkbox" checked={extract} onChange={(e) => setExtract(e.currentTarget.checked)} />
        Extract memories from the files uploaded (facts, events and tasks they state, in the background)
      </label>
      {/* Always there, so screen readers follow it from the first upload: each line's progress and outcome is read
          out as it changes (a refusal is also an alert of its own). */}
      <ul class="uploads" aria-label="Uploads" aria-live="polite">
        {uploads.map((u) => (
          <UploadLine key={u.id} upload={u} />
        ))}
      </ul>
    </section>
  );
}

function UploadLine({ upload: u }: { upload: Upload }) {
  const name = (
    <span class="upload-name">
      {u.name} <span class="muted">({formatBytes(u.bytes)})</span>
    </span>
  );
  if (u.state === "failed")
    return (
      <li class="upload failed">
        {name}
        <span class="error-text" role="alert">
          Not stored: {u.error}
        </span>
      </li>
    );
  if (u.state === "done" && u.result?.status === "converting")
    return (
      <li class="upload done">
        {name}
        <span class="ok-text">
          Stored, converting in the background: {u.result.title} (its status in the list says when it is ready)
          {memoriesNote(u)}
        </span>
      </li>
    );
  if (u.state === "done" && u.result)
    return (
      <li class="upload done">
        {name}
        <span class="ok-text">
          {u.result.unchanged ? "Already stored, unchanged" : "Ready"}: {u.result.title} ·{" "}
          {u.result.pages !== null ? `${countOf(u.result.pages, "page")} · ` : ""}
          {countOf(u.result.sections, "section")} · {countOf(u.result.chunks, "chunk")}
          {memoriesNote(u)}
        </span>
      </li>
    );
  return (
    <li class="upload">
      {name}
      {u.state === "uploading" ? (
        <>
          <progress aria-label={`Uploading ${u.name}`} />
          <span class="muted">Uploading and converting…</span>
        </>
      ) : (
        <span class="muted">Waiting</span>
      )}
    </li>
  );
}

/** What the upload's answer says of memories, when they were asked for or are being extracted. */
function memoriesNote(u: Upload): string {
  if (u.result?.extraction === "queued") return " · memories being extracted";
  return u.extract ? " · no memories: this server has no model to extract them" : "";
}
