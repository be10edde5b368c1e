import {
  forceLink,
  forceManyBody,
  forceSimulation,
  forceX,
  forceY,
  type Simulation,
  type SimulationLinkDatum,
  type SimulationNodeDatum,
} from "d3-force";
import { type Quadtree, quadtree } from "d3-quadtree";

// A force-directed graph on one <canvas>: d3-force lays it out (Barnes-Hut many-body, links, a gentle
// pull to the centre), ticks run inside requestAnimationFrame and stop once the layout has cooled, and
// each frame draws all edges of one colour as one path and all nodes of one colour as one path, so 2,000
// nodes cost a handful of canvas calls. Pan (drag, arrow keys), zoom (wheel, + and -), click or Enter opens.

export interface GraphNode extends SimulationNodeDatum {
  key: string;
  label: string;
  kind: string;
  degree: number;
}

export interface GraphEdge extends SimulationLinkDatum<GraphNode> {
  type: string;
}

export interface GraphStats {
  nodes: number;
  edges: number;
  /** From setData to the end of the first frame drawn. */
  firstDrawMs: number;
  frames: number;
  /** Work per frame (simulation tick + draw), in ms. */
  frameMsAvg: number;
  frameMsMax: number;
  /** The latest redraw alone (also after a pan or zoom), in ms. */
  lastDrawMs: number;
  draws: number;
  settled: boolean;
}

export interface GraphOptions {
  nodeColor(kind: string): string;
  edgeColor(type: string): string;
  onOpen(node: GraphNode): void;
  onSelect(node: GraphNode | null): void;
}

/** Node radius on screen, in CSS pixels (constant at any zoom): 3 for a leaf, up to 8 for a hub. */
const radius = (n: { degree: number }) => 3 + Math.min(5, Math.sqrt(n.degree) - 1);

export class CanvasGraph {
  private nodes: GraphNode[] = [];
  private edges: GraphEdge[] = [];
  private visibleTypes: Set<string> | null = null;
  private simulation: Simulation<GraphNode, GraphEdge> | null = null;
  private tree: Quadtree<GraphNode> | null = null;
  private transform = { x: 0, y: 0, k: 1 };
  private touched = false;
  private frame = 0;
  private selected: GraphNode | null = null;
  private drag: { x: number; y: number; moved: boolean } | null = null;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly resize: ResizeObserver;
  private started = 0;
  readonly stats: GraphStats = {
    nodes: 0,
    edges: 0,
    firstDrawMs: 0,
    frames: 0,
    frameMsAvg: 0,
    frameMsMax: 0,
    lastDrawMs: 0,
    draws: 0,
    settled: false,
  };

  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly options: GraphOptions,
  ) {
    this.ctx = canvas.getContext("2d")!;
    this.resize = new ResizeObserver(() => this.fitCanvas());
    this.resize.observe(canvas);
    canvas.addEventListener("pointerdown", this.onPointerDown);
    canvas.addEventListener("pointermove", this.onPointerMove);
    canvas.addEventListener("pointerup", this.onPointerUp);
    canvas.addEventListener("wheel", this.onWheel, { passive: false });
    canvas.addEventListener("keydown", this.onKey);
    this.fitCanvas();
  }

  setData(nodes: GraphNode[], edges: GraphEdge[]): void {
    this.started = performance.now();
    this.simulation?.stop();
    this.nodes = nodes;
    this.edges = edges;
    this.selected = null;
    this.touched = false;
    Object.assign(this.stats, {
      nodes: nodes.length,
      edges: edges.length,
      firstDrawMs: 0,
      frames: 0,
      frameMsAvg: 0,
      frameMsMax: 0,
      lastDrawMs: 0,
      draws: 0,
      settled: false,
    });
    const n = nodes.length;
    this.simulation = forceSimulation(nodes)
      .force(
        "link",
        forceLink<GraphNode, GraphEdge>(edges)
          .id((d) => d.key)
          .distance(24)
          .strength(0.4),
      )
      .force(
        "charge",
        forceManyBody<GraphNode>()
          .strength(n > 1000 ? -24 : -40)
          .theta(0.95)
          .distanceMax(500),
      )
      .force("x", forceX<GraphNode>(0).strength(0.06))
      .force("y", forceY<GraphNode>(0).strength(0.06))
      .alphaDecay(0.035)
      .stop();
    this.fitView();
    this.draw();
    this.stats.firstDrawMs = round(performance.now() - this.started);
    this.publish();
    this.loop();
  }

  /** Only edges of these relationship types are drawn (null = all). */
  setVisibleTypes(types: Set<string> | null): void {
    this.visibleTypes = types;
    this.draw();
  }

  select(node: GraphNode | null): void {
    this.selected = node;
    this.options.onSelect(node);
    if (node && node.x !== undefined && node.y !== undefined) this.centerOn(node);
    this.draw();
  }

  destroy(): void {
    cancelAnimationFrame(this.frame);
    this.simulation?.stop();
    this.resize.disconnect();
    this.canvas.removeEventListener("pointerdown", this.onPointerDown);
    this.canvas.removeEventListener("pointermove", this.onPointerMove);
    this.canvas.removeEventListener("pointerup", this.onPointerUp);
    this.canvas.removeEventListener("wheel", this.onWheel);
    this.canvas.removeEventListener("keydown", this.onKey);
  }

  private loop = (): void => {
    this.frame = requestAnimationFrame(() => {
      const sim = this.simulation;
      if (!sim) return;
      const start = performance.now();
      sim.tick();
      this.tree = null;
      if (!this.touched && this.stats.frames % 30 === 0) this.fitView();
      this.draw();
      const spent = performance.now() - start;
      const s = this.stats;
      s.frames++;
      s.frameMsAvg = round(s.frameMsAvg + (spent - s.frameMsAvg) / s.frames);
      s.frameMsMax = round(Math.max(s.frameMsMax, spent));
      if (sim.alpha() > sim.alphaMin()) this.loop();
      else {
        s.settled = true;
        if (!this.touched) this.fitView(), this.draw();
      }
      this.publish();
    });
  };

  /** The figures on the canvas element (data-stats), where a test or a curious person can read them. */
  private publish(): void {
    this.canvas.dataset.stats = JSON.stringify(this.stats);
  }

  private fitCanvas(): void {
    const dpr = window.devicePixelRatio || 1;
    const { width, height } = this.canvas.getBoundingClientRect();
    this.canvas.width = Math.max(1, Math.round(width * dpr));
    this.canvas.height = Math.max(1, Math.round(height * dpr));
    this.draw();
  }

  /** Scale and centre so every node is in view. */
  private fitView(): void {
    if (this.nodes.length === 0) return;
    let minX = Infinity,
      minY = Infinity,
      maxX = -Infinity,
      maxY = -Infinity;
    for (const n of this.nodes) {
      (minX = Math.min(minX, n.x ?? 0)), (maxX = Math.max(maxX, n.x ?? 0));
      (minY = Math.min(minY, n.y ?? 0)), (maxY = Math.max(maxY, n.y ?? 0));
    }
    const { width, height } = this.size();
    const k = Math.min(4, 0.9 * Math.min(width / Math.max(1, maxX - minX), height / Math.max(1, maxY - minY)));
    this.transform = { k, x: width / 2 - (k * (minX + maxX)) / 2, y: height / 2 - (k * (minY + maxY)) / 2 };
  }

  private centerOn(node: GraphNode): void {
    const { width, height } = this.size();
    this.transform.x = width / 2 - this.transform.k * node.x!;
    this.transform.y = height / 2 - this.transform.k * node.y!;
  }

  private size(): { width: number; height: number } {
    const dpr = window.devicePixelRatio || 1;
    return { width: this.canvas.width / dpr, height: this.canvas.height / dpr };
  }

  private draw(): void {
    const started = performance.now();
    this.paint();
    this.stats.lastDrawMs = round(performance.now() - started);
    this.stats.draws++;
    if (this.simulation && this.stats.settled) this.publish();
  }

  private paint(): void {
    const ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    const { x, y, k } = this.transform;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * x, dpr * y);
    const visible = this.visibleTypes;
    const byType = groupBy(visible ? this.edges.filter((e) => visible.has(e.type)) : this.edges, (e) => e.type);
    ctx.lineWidth = 1 / k;
    ctx.globalAlpha = 0.55;
    for (const [type, edges] of byType) {
      ctx.beginPath();
      for (const e of edges) {
        const s = e.source as GraphNode,
          t = e.target as GraphNode;
        ctx.moveTo(s.x ?? 0, s.y ?? 0);
        ctx.lineTo(t.x ?? 0, t.y ?? 0);
      }
      ctx.strokeStyle = this.options.edgeColor(type);
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    const byKind = groupBy(this.nodes, (n) => n.kind);
    const r = (n: GraphNode) => radius(n) / k;
    for (const [kind, nodes] of byKind) {
      ctx.beginPath();
      for (const n of nodes) {
        ctx.moveTo((n.x ?? 0) + r(n), n.y ?? 0);
        ctx.arc(n.x ?? 0, n.y ?? 0, r(n), 0, 2 * Math.PI);
      }
      ctx.fillStyle = this.options.nodeColor(kind);
      ctx.fill();
    }
    const sel = this.selected;
    if (sel) {
      ctx.beginPath();
      ctx.arc(sel.x ?? 0, sel.y ?? 0, r(sel) + 4 / k, 0, 2 * Math.PI);
      ctx.lineWidth = 3 / k;
      ctx.strokeStyle = "#f5a623";
      ctx.stroke();
    }
    if (k >= 1.6) this.drawLabels(ctx, k);
  }

  /** Labels (as canvas text) for nodes on screen once zoomed in; at most 150. */
  private drawLabels(ctx: CanvasRenderingContext2D, k: number): void {
    const { width, height } = this.size();
    const { x, y } = this.transform;
    ctx.font = `${11 / k}px system-ui, sans-serif`;
    ctx.fillStyle = getComputedStyle(this.canvas).color;
    let drawn = 0;
    for (const n of this.nodes) {
      const sx = (n.x ?? 0) * k + x,
        sy = (n.y ?? 0) * k + y;
      if (sx < 0 || sy < 0 || sx > width || sy > height) continue;
      ctx.fillText(n.label.length > 40 ? `${n.label.slice(0, 39)}…` : n.label, (n.x ?? 0) + 8 / k, (n.y ?? 0) + 4 / k);
      if (++drawn >= 150) break;
    }
  }

  private nodeAt(clientX: number, clientY: number): GraphNode | null {
    const rect = this.canvas.getBoundingClientRect();
    const gx = (clientX - rect.left - this.transform.x) / this.transform.k;
    const gy = (clientY - rect.top - this.transform.y) / this.transform.k;
    this.tree ??= quadtree<GraphNode>()
      .x((d) => d.x ?? 0)
      .y((d) => d.y ?? 0)
      .addAll(this.nodes);
    return this.tree.find(gx, gy, 10 / this.transform.k) ?? null;
  }

  private onPointerDown = (e: PointerEvent): void => {
    this.canvas.setPointerCapture(e.pointerId);
    this.drag = { x: e.clientX, y: e.clientY, moved: false };
  };

  private onPointerMove = (e: PointerEvent): void => {
    if (!this.drag) {
      this.canvas.style.cursor = this.nodeAt(e.clientX, e.clientY) ? "pointer" : "grab";
      return;
    }
    const dx = e.clientX - this.drag.x,
      dy = e.clientY - this.drag.y;
    if (!this.drag.moved && Math.hypot(dx, dy) < 4) return;
    this.drag = { x: e.clientX, y: e.clientY, moved: true };
    this.pan(dx, dy);
  };

  private onPointerUp = (e: PointerEvent): void => {
    const drag = this.drag;
    this.drag = null;
    if (drag && !drag.moved) {
      const node = this.nodeAt(e.clientX, e.clientY);
      this.select(node);
      if (node) this.options.onOpen(node);
    }
  };

  private onWheel = (e: WheelEvent): void => {
    e.preventDefault();
    const rect = this.canvas.getBoundingClientRect();
    this.zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - rect.left, e.clientY - rect.top);
  };

  private onKey = (e: KeyboardEvent): void => {
    const { width, height } = this.size();
    const step = 60;
    const actions: Record<string, () => void> = {
      ArrowLeft: () => this.pan(step, 0),
      ArrowRight: () => this.pan(-step, 0),
      ArrowUp: () => this.pan(0, step),
      ArrowDown: () => this.pan(0, -step),
      "+": () => this.zoom(1.25, width / 2, height / 2),
      "=": () => this.zoom(1.25, width / 2, height / 2),
      "-": () => this.zoom(0.8, width / 2, height / 2),
      "0": () => ((this.touched = false), this.fitView(), this.draw()),
      n: () => this.step(1),
      N: () => this.step(-1),
      Enter: () => this.selected && this.options.onOpen(this.selected),
      Escape: () => this.select(null),
    };
    const action = actions[e.key];
    if (!action) return;
    e.preventDefault();
    action();
  };

  /** Keyboard selection: the next (or previous) node, most connected first. */
  private step(direction: 1 | -1): void {
    if (this.nodes.length === 0) return;
    const order = [...this.nodes].sort((a, b) => b.degree - a.degree);
    const at = this.selected ? order.indexOf(this.selected) : -1;
    this.select(order[(at + direction + order.length) % order.length]!);
    this.touched = true;
  }

  private pan(dx: number, dy: number): void {
    this.touched = true;
    this.transform.x += dx;
    this.transform.y += dy;
    this.draw();
  }

  private zoom(factor: number, cx: number, cy: number): void {
    this.touched = true;
    const k = Math.min(12, Math.max(0.05, this.transform.k * factor));
    const f = k / this.transform.k;
    this.transform = { k, x: cx - (cx - this.transform.x) * f, y: cy - (cy - this.transform.y) * f };
    this.draw();
  }
}

function groupBy<T>(values: T[], key: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const value of values) {
    const k = key(value);
    const group = groups.get(k);
    if (group) group.push(value);
    else groups.set(k, [value]);
  }
  return groups;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
