// Types of data.mjs for the TypeScript bench scripts (real-text.ts).
export function loadLocomo(): { sample_id: string; conversation: Record<string, unknown> }[];
export function loadMsmarco(): {
  corpus: { _id: string; text: string }[];
  queries: { _id: string; text: string }[];
  qrels: Map<string, Map<string, number>>;
};
export function parseLocomoDate(text: string): number;
