import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { callTool, type Session } from "../api";
import { SERIES_COLORS } from "../charts/charts";
import { CanvasGraph, type GraphEdge, type GraphNode } from "../graph/canvas-graph";
import { href } from "../router";
import { ErrorNote, formatNumber, Loading, Section, useAsync } from "../ui";
import { MemoryBody, type MemoryRecord } from "./memory-detail";

interface Graph {
  nodes: {
    id: string;
    node_type: "item" | "conversation";
    project: string;
    kind: string;
    type: string;
    label: string;
    degree: number;
  }[];
  edges: { source: string; source_type: string; target: string; target_type: string; relationship_type: string }[];
  total_nodes: number;
  total_edges: number;
  truncated: boolean;
}

export const MAX_GRAPH_NODES = 2000;
const KIND_COLORS: Record<string, string> = {
  memory: "#2f7ed8",
  document: "#29a36a",
  message: "#e4572e",
  segment: "#b04fc4",
  snapshot: "#8d6e4a",
  conversation: "#d99a00",
};
const nodeColor = (kind: string) => KIND_COLORS[kind] ?? "#4f6d7a";

/** The knowledge graph: one get_knowledge_graph call, drawn on a canvas; a node opens beside it. */
export function GraphView({ session }: { session: Session }) {
  const [project, setProject] = useState("");
  const projects = useAsync(
    () => callTool<{ projects: string[] }>(session.key, "context_list_projects").then((r) => r.projects),
    [session.key],
  );
  const graph = useAsync(
    () =>
      callTool<Graph>(session.key, "get_knowledge_graph", {
        ...(project ? { project } : {}),
        max_nodes: MAX_GRAPH_NODES,
      }),
    [session.key, project],
  );
  const types = useMemo(
    () => [...new Set((graph.data?.edges ?? []).map((e) => e.relationship_type))].sort(),
    [graph.data],
  );
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [open, setOpen] = useState<GraphNode | null>(null);
  const edgeColor = useMemo(
    () => (type: string) => SERIES_COLORS[Math.max(0, types.indexOf(type)) % SERIES_COLORS.length]!,
    [types],
  );
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const engine = useRef<CanvasGraph | null>(null);
  const data = graph.data;

  useEffect(() => {
    if (!canvasRef.current || !data) return;
    const g = new CanvasGraph(canvasRef.current, { nodeColor, edgeColor, onOpen: setOpen, onSelect: () => {} });
    engine.current = g;
    const key = (type: string, id: string) => `${type}:${id}`;
    const nodes: GraphNode[] = data.nodes.map((n) => ({
      key: key(n.node_type, n.id),
      label: n.label,
      kind: n.kind,
      degree: n.degree,
    }));
    const edges: GraphEdge[] = data.edges.map((e) => ({
      source: key(e.source_type, e.source),
      target: key(e.target_type, e.target),
      type: e.relationship_type,
    }));
    g.setData(nodes, edges);
    return () => g.destroy();
  }, [data]);
  useEffect(
    () => engine.current?.setVisibleTypes(hidden.size === 0 ? null : new Set(types.filter((t) => !hidden.has(t)))),
    [hidden, types],
  );

  return (
    <>
      <h1>Knowledge graph</h1>
      <div class="toolbar">
        <div class="field inline">
          <label for="graph-project">Project</label>
          <select
            id="graph-project"
            value={project}
            onChange={(e) => (setOpen(null), setProject(e.currentTarget.value))}
          >
            <option value="">All projects</option>
            {(projects.data ?? []).map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
        <fieldset class="types">
          <legend>Relationship types</legend>
          {types.map((t) => (
            <label key={t} class="check">
              <input
                type="checkbox"
                checked={!hidden.has(t)}
                onChange={(e) => setHidden((h) => toggled(h, t, !e.currentTarget.checked))}
              />
              <span class="swatch" style={{ background: edgeColor(t) }} aria-hidden="true" />
              {t}
            </label>
          ))}
        </fieldset>
      </div>
      <ErrorNote error={graph.error ?? projects.error} />
      <Loading when={graph.loading} label="Loading the graph…" />
      {data && (
        <p class="muted">
          {formatNumber(data.nodes.length)} of {formatNumber(data.total_nodes)} linked records,{" "}
          {formatNumber(data.edges.length)} links
          {data.truncated ? " (the most connected are drawn)" : ""}. Drag to pan, wheel to zoom; on the canvas, arrow
          keys pan, + and − zoom, 0 fits, N selects the next node and Enter opens it.
        </p>
      )}
      <div class="graph-layout">
        <div class="graph-box">
          {data && data.nodes.length === 0 ? (
            <p class="muted">
              No links yet: memories are linked as they are stored (similar content) or with link_resources.
            </p>
          ) : (
            <canvas
              ref={canvasRef}
              class="graph"
              tabIndex={0}
              aria-label={`Knowledge graph with ${data?.nodes.length ?? 0} nodes; arrow keys pan, plus and minus zoom, N selects the next node, Enter opens it`}
            />
          )}
          <ul class="legend" aria-label="Node kinds">
            {Object.entries(KIND_COLORS).map(([kind, color]) => (
              <li key={kind}>
                <span class="swatch" style={{ background: color }} aria-hidden="true" />
                {kind}
              </li>
            ))}
          </ul>
        </div>
        <aside class="graph-side" aria-label="Selected node">
          {open ? (
            <OpenNode session={session} node={open} />
          ) : (
            <p class="muted">Click a node (or press N, then Enter) to open it here.</p>
          )}
        </aside>
      </div>
      {data && data.nodes.length > 0 && <NodeList nodes={data.nodes} />}
    </>
  );
}

function toggled(set: Set<string>, value: string, on: boolean): Set<string> {
  const next = new Set(set);
  if (on) next.add(value);
  else next.delete(value);
  return next;
}

function OpenNode({ session, node }: { session: Session; node: GraphNode }) {
  const [type, id] = [node.key.slice(0, node.key.indexOf(":")), node.key.slice(node.key.indexOf(":") + 1)];
  const memory = useAsync(
    () => (type === "item" ? callTool<MemoryRecord>(session.key, "memory_get", { id }) : Promise.resolve(null)),
    [session.key, node.key],
  );
  if (type === "conversation") {
    return (
      <Section title="Conversation">
        <p>
          <a href={href("conversations", id)}>Open conversation {id}</a>
        </p>
      </Section>
    );
  }
  return (
    <>
      <p>
        <a href={href("memory", id)}>Open the full memory page</a>
      </p>
      <ErrorNote error={memory.error} />
      <Loading when={memory.loading} />
      {memory.data && <MemoryBody memory={memory.data} compact />}
    </>
  );
}

/** The same nodes as a list, for finding one by name and for screen readers. */
function NodeList({ nodes }: { nodes: Graph["nodes"] }) {
  const [filter, setFilter] = useState("");
  const shown = nodes.filter((n) => n.label.toLowerCase().includes(filter.toLowerCase())).slice(0, 100);
  return (
    <details class="card">
      <summary>Nodes as a list (most connected first)</summary>
      <div class="field">
        <label for="node-filter">Find a node</label>
        <input id="node-filter" type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
      </div>
      <ul class="plain">
        {shown.map((n) => (
          <li key={`${n.node_type}:${n.id}`}>
            <a href={n.node_type === "item" ? href("memory", n.id) : href("conversations", n.id)}>{n.label}</a>{" "}
            <span class="muted">
              ({n.kind}, {n.degree} links)
            </span>
          </li>
        ))}
      </ul>
    </details>
  );
}
