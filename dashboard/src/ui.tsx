import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { ApiError } from "./api";

// Small pieces every view uses. Text from the server is only ever rendered as text (JSX children and
// attributes), never as markup.

export const ITEM_TYPES = [
  "note",
  "document",
  "code",
  "message",
  "log",
  "config",
  "data",
  "decision",
  "error",
  "reference",
  "summary",
  "task",
  "test",
  "snapshot",
];

export interface Async<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `deps` change (and on reload); keeps the last data while reloading. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data: T | null; error: ApiError | null; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: ApiError) => live && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function ErrorNote({ error }: { error: ApiError | Error | null }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

export function Loading({ when, label = "Loading…" }: { when: boolean; label?: string }) {
  return when ? (
    <p class="muted" role="status">
      {label}
    </p>
  ) : null;
}

export function Tags({ tags }: { tags: string[] }) {
  if (tags.length === 0) return <span class="muted">no tags</span>;
  return (
    <ul class="tags" aria-label="Tags">
      {tags.map((t) => (
        <li key={t}>{t}</li>
      ))}
    </ul>
  );
}

export function Section({
  title,
  children,
  actions,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <section class="card" aria-label={title}>
      <header class="card-head">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

/** A modal confirmation (<dialog>): focus moves into it, Escape cancels. */
export function Confirm(props: {
  open: boolean;
  title: string;
  body: string;
  confirmLabel: string;
  onConfirm(): void;
  onCancel(): void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby="confirm-title" onCancel={(e) => (e.preventDefault(), props.onCancel())}>
      <h2 id="confirm-title">{props.title}</h2>
      <p>{props.body}</p>
      <div class="actions">
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
        <button type="button" onClick={props.onCancel} autofocus>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

export function formatDate(iso: string | number | null): string {
  if (iso === null) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? String(iso)
    : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function formatNumber(n: number): string {
  return n.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

/** 1 -> "1 chunk", 1200 -> "1,200 chunks". */
export function countOf(n: number, noun: string): string {
  return `${formatNumber(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** 1536 -> "1.5 KB": a file's size as people read it (powers of 1,024, as file managers show them). */
export function formatBytes(bytes: number): string {
  const units = ["bytes", "KB", "MB", "GB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toLocaleString(undefined, { maximumFractionDigits: unit === 0 ? 0 : 1 })} ${units[unit]}`;
}

/** "a, b ,c" -> ["a", "b", "c"] (empty parts dropped, duplicates once). */
export function splitList(text: string): string[] {
  return [
    ...new Set(
      text
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
}
