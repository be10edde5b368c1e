import { useState } from "preact/hooks";
import { type ApiError, type Session, signIn } from "../api";
import { ErrorNote } from "../ui";

/**
 * Sign in with a tenant API key. The input has no name, so even a form submitted without this script
 * could not carry the key anywhere; the key is checked with whoami and kept in sessionStorage only.
 */
export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn(session: Session): void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await signIn(key.trim()));
    } catch (e) {
      setError(e as ApiError);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>Context Edge</h1>
      <p class="muted">See, search, correct and forget what your agents remember.</p>
      {notice && <p role="status">{notice}</p>}
      <form method="post" action="#" onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="ce_…"
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <p class="muted small">
          The key stays in this browser tab (session storage) and goes only to this server. What the key may see and do
          is what this dashboard shows.
        </p>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}
