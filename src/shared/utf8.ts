/**
 * UTF-8 bytes of a string without encoding it: what the platform counts (D1, KV, Queues) and what SQLite's
 * length(CAST(text AS BLOB)) gives (the usage triggers). A surrogate pair is 4 bytes, a lone surrogate 3 (it is
 * stored as U+FFFD).
 */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}
