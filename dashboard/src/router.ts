import { useEffect, useState } from "preact/hooks";

/** Hash routes (#/memories, #/memory/<id>, ...): nothing about the view or the key goes to the server. */
export interface Route {
  view: string;
  id: string | null;
}

export function parseRoute(hash: string): Route {
  const [view, ...rest] = hash.replace(/^#\/?/, "").split("/");
  return { view: view || "memories", id: rest.length > 0 ? decodeURIComponent(rest.join("/")) : null };
}

export function href(view: string, id?: string | null): string {
  return `#/${view}${id ? `/${encodeURIComponent(id)}` : ""}`;
}

export function navigate(view: string, id?: string | null): void {
  location.hash = href(view, id);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}
