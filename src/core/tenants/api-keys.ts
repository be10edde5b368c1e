import { base64Url, sha256Hex } from "../../crypto";

/** API key secrets: 256 random bits, shown once, stored only as a SHA-256 hash. */

export const API_KEY_PREFIX = "ce_";

export type Scope = "read" | "write" | "admin";
export const SCOPES: readonly Scope[] = ["read", "write", "admin"];

/** Scopes are ordered: a write key can also read; an admin key can also write. */
export function scopeAllows(granted: readonly Scope[], required: Scope): boolean {
  const rank = (s: Scope) => SCOPES.indexOf(s);
  return granted.some((s) => rank(s) >= rank(required));
}

/** What a key may do: its scopes and its projects (null = every project of the tenant). */
export interface KeyReach {
  scopes: readonly Scope[];
  projects: readonly string[] | null;
}

/** Whether a key with `granter`'s reach may create or revoke a key with `target`'s: never a wider one. */
export function reachCovers(granter: KeyReach, target: KeyReach): boolean {
  if (!target.scopes.every((scope) => scopeAllows(granter.scopes, scope))) return false;
  if (granter.projects === null) return true;
  return target.projects?.every((p) => granter.projects!.includes(p)) ?? false;
}

export function generateApiKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return API_KEY_PREFIX + base64Url(bytes);
}

export function hashApiKey(secret: string): Promise<string> {
  return sha256Hex(secret);
}
