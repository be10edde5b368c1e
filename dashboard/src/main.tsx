import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { allows, type Session, setUnauthorizedHandler, signIn, signOut, storedKey } from "./api";
import { href, useRoute } from "./router";
import { ErrorNote } from "./ui";
import { ConversationsView } from "./views/conversations";
import { DocumentsView } from "./views/documents";
import { GraphView } from "./views/graph-view";
import { KeysView } from "./views/keys";
import { MemoriesView } from "./views/memories";
import { MemoryDetail } from "./views/memory-detail";
import { SignIn } from "./views/sign-in";
import { UsageView } from "./views/usage";
import { WorkingSetView } from "./views/working-set";
import "./styles.css";

const NAV: { view: string; label: string; admin?: boolean }[] = [
  { view: "memories", label: "Memories" },
  { view: "documents", label: "Documents" },
  { view: "conversations", label: "Conversations" },
  { view: "working-set", label: "Working set" },
  { view: "graph", label: "Graph" },
  { view: "usage", label: "Usage" },
  { view: "keys", label: "Keys", admin: true },
];

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedKey() !== null);
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    setUnauthorizedHandler((message) => {
      signOut();
      setSession(null);
      setNotice(`Signed out: ${message}`);
    });
    const key = storedKey();
    if (key) {
      signIn(key)
        .then(setSession, () => signOut())
        .finally(() => setRestoring(false));
    }
  }, []);

  if (restoring) return <p class="muted center">Signing in…</p>;
  if (!session) return <SignIn notice={notice} onSignedIn={(s) => (setNotice(null), setSession(s))} />;
  return (
    <Shell
      session={session}
      onSignOut={() => {
        signOut();
        setSession(null);
      }}
    />
  );
}

function Shell({ session, onSignOut }: { session: Session; onSignOut(): void }) {
  const route = useRoute();
  const nav = NAV.filter((n) => !n.admin || allows(session, "admin"));
  const current = route.view === "memory" ? "memories" : route.view;
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href={href("memories")}>
          Context Edge
        </a>
        <nav aria-label="Dashboard sections">
          <ul>
            {nav.map((n) => (
              <li key={n.view}>
                <a href={href(n.view)} aria-current={current === n.view ? "page" : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label names what the text around the key is */}
        <div class="who" aria-label="Signed-in key">
          <span title={`key ${session.keyId}`}>
            {session.tenantId} · {session.scopes.join(", ")} ·{" "}
            {session.projects ? `projects: ${session.projects.join(", ")}` : "all projects"}
          </span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main">
        <View session={session} view={route.view} id={route.id} />
      </main>
    </div>
  );
}

function View({ session, view, id }: { session: Session; view: string; id: string | null }) {
  switch (view) {
    case "memories":
      return <MemoriesView session={session} />;
    case "memory":
      return id ? <MemoryDetail session={session} id={id} /> : <MemoriesView session={session} />;
    case "documents":
      return <DocumentsView session={session} />;
    case "conversations":
      return <ConversationsView session={session} id={id} />;
    case "working-set":
      return <WorkingSetView session={session} />;
    case "graph":
      return <GraphView session={session} />;
    case "usage":
      return <UsageView session={session} />;
    case "keys":
      return allows(session, "admin") ? (
        <KeysView session={session} />
      ) : (
        <ErrorNote error={new Error("Managing keys needs a key with the admin scope.")} />
      );
    default:
      return <ErrorNote error={new Error(`No page '${view}'.`)} />;
  }
}

render(<App />, document.getElementById("app")!);
