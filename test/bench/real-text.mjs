// Runs real-text.ts under tsx (the adapters it measures are TypeScript) and returns its lines.
import { execFileSync } from "node:child_process";

export async function runRealText() {
  const out = execFileSync(process.execPath, ["--import", "tsx", "test/bench/real-text.ts"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return out.trimEnd().split("\n");
}
