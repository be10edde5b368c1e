/**
 * Where a document's original and its Markdown are kept in R2: under its tenant and id, by version (SHA-256), so a
 * replacement is written beside the old version and the old one removed only once the new one is in D1.
 */
export const originalKey = (tenantId: string, documentId: string, sha256: string) =>
  `${tenantId}/${documentId}/${sha256}`;
export const markdownKey = (tenantId: string, documentId: string, sha256: string) =>
  `${originalKey(tenantId, documentId, sha256)}.md`;
/** Everything of one document, and of one tenant. */
export const documentPrefix = (tenantId: string, documentId: string) => `${tenantId}/${documentId}/`;
export const tenantPrefix = (tenantId: string) => `${tenantId}/`;

/** Deletes every object under a prefix, a page (up to 1,000 keys) at a time; returns how many went. */
export async function deleteObjects(
  bucket: R2Bucket,
  prefix: string,
  pages = Number.POSITIVE_INFINITY,
): Promise<number> {
  let deleted = 0;
  let cursor: string | undefined;
  for (let page = 0; page < pages; page++) {
    const listed = await bucket.list({ prefix, cursor, limit: 1000 });
    if (listed.objects.length > 0) await bucket.delete(listed.objects.map((o) => o.key));
    deleted += listed.objects.length;
    if (!listed.truncated) break;
    cursor = listed.cursor;
  }
  return deleted;
}

/** Deletes the objects of a document's other versions (a replacement's earlier original and Markdown). */
export async function deleteOtherVersions(
  bucket: R2Bucket,
  tenantId: string,
  documentId: string,
  sha256: string,
): Promise<void> {
  const prefix = documentPrefix(tenantId, documentId);
  const listed = await bucket.list({ prefix, limit: 1000 });
  const others = listed.objects.map((o) => o.key).filter((key) => !key.startsWith(`${prefix}${sha256}`));
  if (others.length > 0) await bucket.delete(others);
}
