// Bytes as base64 text and back, for documents' bytes inside JSON (memory_ingest_document's content_base64, an
// export's originals). Workers have atob and btoa, which work on strings of byte values.

/** The bytes of base64 text (standard or URL-safe alphabet, whitespace ignored); null when it is not base64. */
export function bytesOfBase64(text: string): Uint8Array | null {
  const clean = text.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean) || clean.length % 4 === 1) return null;
  const binary = atob(clean.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The bytes as standard base64, built a slice at a time so a large file does not make one huge argument list. */
export function base64OfBytes(bytes: Uint8Array): string {
  const SLICE = 0x8000;
  let binary = "";
  for (let i = 0; i < bytes.length; i += SLICE)
    binary += String.fromCharCode(...bytes.subarray(i, Math.min(i + SLICE, bytes.length)));
  return btoa(binary);
}
