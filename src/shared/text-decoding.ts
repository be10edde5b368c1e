/**
 * A text file's bytes as text, whatever it was saved as: a byte order mark says UTF-8 or UTF-16 (Excel's "Unicode
 * text" is UTF-16LE); else the charset an HTML page declares in its first 1,024 bytes; else UTF-8 when the bytes are
 * valid UTF-8, and Windows-1252 when they are not (what an older Windows program or Excel's "CSV" saves, and what the
 * WHATWG Encoding Standard reads "latin1" as). Never U+FFFD for an "é" saved in Latin-1.
 */
export function decodeText(bytes: Uint8Array, html = false): string {
  const bom = byteOrderMark(bytes);
  if (bom) return new TextDecoder(bom).decode(bytes);
  const declared = html ? declaredCharset(bytes) : null;
  if (declared) {
    const decoder = decoderFor(declared);
    if (decoder) return decoder.decode(bytes);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return new TextDecoder("windows-1252").decode(bytes);
  }
}

function byteOrderMark(bytes: Uint8Array): string | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8";
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le";
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be";
  return null;
}

/** `<meta charset="…">` or `<meta http-equiv="Content-Type" content="text/html; charset=…">`, as the page says. */
function declaredCharset(bytes: Uint8Array): string | null {
  const head = new TextDecoder("windows-1252").decode(bytes.subarray(0, 1024));
  return /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1] ?? null;
}

/** A decoder for a label the Encoding Standard knows; null for one it does not. */
function decoderFor(label: string): TextDecoder | null {
  try {
    return new TextDecoder(label);
  } catch {
    return null;
  }
}
