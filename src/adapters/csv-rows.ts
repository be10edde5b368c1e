import type { ConvertedDocument } from "../ports";
import type { DocumentBlock } from "../shared/document-blocks";

// CSV with papaparse: one text block per row, each value named by its column ("city: Lyon; price: 12"), so a
// chunk of rows is readable and searchable without the header line it came under. Loaded on first use.

export async function convertCsv(text: string): Promise<ConvertedDocument> {
  const { default: Papa } = await import("papaparse");
  const parsed = Papa.parse<string[]>(text.trim(), { skipEmptyLines: "greedy" });
  const [header, ...rows] = parsed.data;
  const blocks: DocumentBlock[] = [];
  if (header && rows.length > 0) {
    const names = header.map((name, i) => name.trim() || `column ${i + 1}`);
    for (const row of rows) {
      const cells = row.map((value, i) => (value.trim() ? `${names[i] ?? `column ${i + 1}`}: ${value.trim()}` : ""));
      const line = cells.filter(Boolean).join("; ");
      if (line) blocks.push({ kind: "text", text: line });
    }
  } else if (header) {
    blocks.push({ kind: "text", text: header.join("; ") });
  }
  return { title: null, pages: null, blocks };
}
