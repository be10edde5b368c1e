// Seed 004 working set and GC latency (being written).
export async function runGc() {
  return ["gc: not written yet"];
}
