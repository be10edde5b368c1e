import { useState } from "preact/hooks";
import { type ApiError, adminRequest, type Scope, type Session } from "../api";
import { Confirm, ErrorNote, formatDate, Loading, Section, splitList, useAsync } from "../ui";

interface KeyInfo {
  key_id: string;
  name: string;
  key_prefix: string;
  scopes: Scope[];
  projects: string[] | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/**
 * The tenant's keys through the admin API (admin scope): list, create (the secret is shown once), revoke.
 * The server lists and allows only keys within this key's own scopes and projects.
 */
export function KeysView({ session }: { session: Session }) {
  const keys = useAsync(
    () =>
      adminRequest<{ keys: KeyInfo[] }>(
        session.key,
        "GET",
        `/tenants/${encodeURIComponent(session.tenantId)}/keys`,
      ).then((r) => r.keys),
    [session.key],
  );
  const [revoking, setRevoking] = useState<KeyInfo | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const revoke = async () => {
    const key = revoking!;
    setRevoking(null);
    try {
      await adminRequest(session.key, "DELETE", `/keys/${encodeURIComponent(key.key_id)}`);
      keys.reload();
    } catch (e) {
      setError(e as ApiError);
    }
  };
  return (
    <>
      <h1>API keys</h1>
      <CreateKey session={session} onCreated={keys.reload} />
      <Section title="Keys">
        <Loading when={keys.loading && !keys.data} />
        <ErrorNote error={keys.error ?? error} />
        {keys.data && (
          <table class="grid">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Scopes</th>
                <th scope="col">Projects</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((k) => (
                <tr key={k.key_id}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.key_prefix}…</code>
                  </td>
                  <td>{k.scopes.join(", ")}</td>
                  <td>{k.projects ? k.projects.join(", ") : "all"}</td>
                  <td>{formatDate(k.created_at)}</td>
                  <td>{formatDate(k.last_used_at)}</td>
                  <td>
                    {k.revoked_at ? (
                      `revoked ${formatDate(k.revoked_at)}`
                    ) : (
                      <button
                        type="button"
                        class="danger"
                        onClick={() => setRevoking(k)}
                        aria-label={`Revoke key ${k.name} (${k.key_prefix})`}
                      >
                        Revoke{k.key_id === session.keyId ? " (this key)" : ""}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Confirm
        open={revoking !== null}
        title="Revoke this key?"
        body={
          revoking
            ? `“${revoking.name}” (${revoking.key_prefix}…) stops working at once${revoking.key_id === session.keyId ? "; it is the key you are signed in with" : ""}. This cannot be undone.`
            : ""
        }
        confirmLabel="Revoke"
        onConfirm={revoke}
        onCancel={() => setRevoking(null)}
      />
    </>
  );
}

function CreateKey({ session, onCreated }: { session: Session; onCreated(): void }) {
  const [name, setName] = useState("");
  const [scope, setScope] = useState<Scope>("read");
  const [projects, setProjects] = useState(session.projects?.join(", ") ?? "");
  const [created, setCreated] = useState<{ api_key: string; name: string } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      const list = splitList(projects);
      const key = await adminRequest<{ api_key: string; name: string }>(
        session.key,
        "POST",
        `/tenants/${encodeURIComponent(session.tenantId)}/keys`,
        {
          name: name.trim() || "dashboard key",
          scopes: [scope],
          projects: list.length > 0 ? list : null,
        },
      );
      setCreated(key);
      setName("");
      onCreated();
    } catch (e) {
      setError(e as ApiError);
    }
  };
  return (
    <Section title="Create a key">
      <form class="edit" onSubmit={submit} aria-label="Create a key">
        <div class="field grow">
          <label for="key-name">Name</label>
          <input
            id="key-name"
            type="text"
            maxLength={200}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            placeholder="e.g. CI agent"
          />
        </div>
        <fieldset class="field">
          <legend>Scope</legend>
          {(["read", "write", "admin"] as Scope[]).map((s) => (
            <label key={s} class="radio">
              <input type="radio" name="key-scope" value={s} checked={scope === s} onChange={() => setScope(s)} />
              {s}
            </label>
          ))}
        </fieldset>
        <div class="field grow">
          <label for="key-projects">Projects (comma-separated; empty = all)</label>
          <input id="key-projects" type="text" value={projects} onInput={(e) => setProjects(e.currentTarget.value)} />
        </div>
        <div class="field actions">
          <button type="submit" class="primary">
            Create key
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      {created && (
        <div class="secret" role="status">
          <p>
            <strong>Key “{created.name}” created.</strong> Copy it now: it is shown only once.
          </p>
          <label for="new-key">New API key</label>
          <input id="new-key" type="text" readOnly value={created.api_key} onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={() => setCreated(null)}>
            Done, hide it
          </button>
        </div>
      )}
    </Section>
  );
}
