export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function randomId(prefix: string, bytes = 12): string {
  return prefix + base64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

export function base64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * Constant-time equality of two secrets (the admin token): both sides are hashed with SHA-256 and the
 * digests compared with the runtime's crypto.subtle.timingSafeEqual. A byte loop over the strings would run
 * for the longer one's length and branch past the shorter one's end, so its time would tell the token's length,
 * and it would leave the comparison to the JIT; two 32-byte digests take the same path whatever is presented.
 */
export async function secretEquals(presented: string, secret: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(presented)),
    crypto.subtle.digest("SHA-256", encoder.encode(secret)),
  ]);
  return crypto.subtle.timingSafeEqual(a, b);
}
