// Types of documents-corpus.mjs for test/node/bench-documents.test.ts.
export interface Passage {
  _id: string;
  text: string;
}
export interface BenchDocument {
  title: string;
  passages: Passage[];
}
export const PASSAGES_PER_DOCUMENT: number;
export function groupPassages(passages: Passage[], size?: number): BenchDocument[];
export function passageHeading(k: number): string;
export function headingNumber(heading: string): number | null;
export function documentHtml(document: BenchDocument, options?: { perPage?: number }): string;
export function webPageHtml(document: BenchDocument): string;
export function documentParagraphs(document: BenchDocument): { heading?: 1 | 2; text: string }[];
export function documentText(document: BenchDocument): string;
