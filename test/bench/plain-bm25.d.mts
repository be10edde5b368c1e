/** Indexes the documents in plain FTS5; returns search(query, project, limit) -> ids, best first. */
export function plainBm25(
  documents: { id: string; project: string; text: string }[],
): (query: string, project: string, limit: number) => string[];
export function locomoTurns(samples: unknown[]): { id: string; project: string; text: string }[];
