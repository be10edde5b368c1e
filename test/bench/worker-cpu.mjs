// The worker's own CPU time, read from V8's sampling profiler through wrangler dev's inspector. Locally the platform's
// count (a trace's cpuTime, which production's get_usage_report reports) is 0, and the workerd process's CPU includes
// local D1's SQLite, the local embedder and vector index: the samples of the worker's isolate are the nearest measure
// of what production bills. Counted: samples in JavaScript and in the garbage collector; not counted: "(program)" (the
// runtime's own code on the thread, and time it does not attribute) and "(idle)".

const SAMPLE_EVERY_US = 500;
/** Frames that are not the worker's computing. */
const NOT_WORK = new Set(["(idle)", "(program)"]);

/** Starts sampling the worker at `inspectorUrl`; `stop()` ends it and gives the milliseconds the worker computed. */
export async function profileWorker(inspectorUrl) {
  // wrangler's inspector proxy accepts the devtools origin only (Node's WebSocket takes headers beside the standard).
  const socket = new WebSocket(inspectorUrl, { headers: { origin: "https://devtools.devprod.cloudflare.dev" } });
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", () => reject(new Error(`no inspector at ${inspectorUrl}`)), { once: true });
  });
  let next = 0;
  const waiting = new Map();
  socket.addEventListener("message", ({ data }) => {
    const message = JSON.parse(String(data));
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, (m) => (m.error ? reject(new Error(`${method}: ${m.error.message}`)) : resolve(m.result)));
      socket.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: SAMPLE_EVERY_US });
  await send("Profiler.start");
  return {
    async stop() {
      try {
        const { profile } = await send("Profiler.stop");
        return busyMs(profile);
      } finally {
        socket.close();
      }
    },
  };
}

/** The profile's milliseconds of samples in the worker's code and its garbage collection. */
export function busyMs(profile) {
  const names = new Map(profile.nodes.map((node) => [node.id, node.callFrame.functionName]));
  let us = 0;
  profile.samples.forEach((id, i) => {
    if (!NOT_WORK.has(names.get(id))) us += profile.timeDeltas[i];
  });
  return us / 1000;
}
