/** Fixture files imported as text (Vite's ?raw), e.g. test/fixtures/mcp-memory.jsonl. */
declare module "*?raw" {
  const content: string;
  export default content;
}
