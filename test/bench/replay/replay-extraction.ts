// `npm run replay -- extraction`: the extraction bench's recall figures (test/bench/extraction.mjs) replayed over the
// D1 file it left: every question searched over the turns alone and over turns and derived memories, results folded
// as the search tool folds them, evidence credited as the bench credits it (coveredTurns). Seconds where the bench
// takes many minutes, for trying a change to how derived memories rank. FOLD=0 leaves folding out, to compare.
import type { DatabaseSync } from "node:sqlite";
import { type SearchHit, searchChunks } from "../../../src/core/search/search";
import { tenantScope } from "../../../src/db/scope";
import type { Services } from "../../../src/ports";
import { coveredTurns, evidenceRecall, locomoQuestions, type StoredTurn } from "../conversation-ingest.mjs";
import type { LocomoSample } from "../extraction.mjs";
import { mean } from "../metrics.mjs";

const K = 10;

export async function replayExtraction(
  db: DatabaseSync,
  d1: D1Database,
  services: Services,
  tenant: string,
  samples: LocomoSample[],
  categories: Record<string, string>,
): Promise<string[]> {
  const turns = storedTurns(db, tenant, samples);
  const questions = locomoQuestions(samples).filter((qa) => qa.evidence.size > 0);
  const scope = tenantScope(d1, tenant);
  const foldSources = process.env.FOLD !== "0";
  const recall = async (kinds: string[] | undefined) => {
    const recalls: number[] = [];
    for (const qa of questions) {
      const hits = await searchChunks(scope, services, qa.question, { projects: [qa.project], kinds }, K, {
        foldSources,
      });
      recalls.push(evidenceRecall(qa.evidence, coveredTurns(hits.map(asResult), turns)));
    }
    return recalls;
  };
  const turnsOnly = await recall(["message"]);
  const withDerived = await recall(undefined);
  const of = (keep: (category: number) => boolean, recalls: number[]) =>
    mean(questions.flatMap((qa, i) => (keep(qa.category) ? [recalls[i]!] : [])));
  const pct = (x: number) => (100 * x).toFixed(1);
  const groups: [string, (category: number) => boolean][] = [
    ...Object.entries(categories).map(([cat, label]): [string, (c: number) => boolean] => [
      `${cat} ${label}`,
      (c) => String(c) === cat,
    ]),
    ["all 1-4", (c) => c >= 1 && c <= 4],
  ];
  return [
    `Extraction replay${foldSources ? "" : " (FOLD=0)"}: evidence R@${K} (%), ${questions.length} questions, ${turns.size} turns: turns only / turns + derived`,
    ...groups.map(([label, keep]) => {
      const [a, b] = [of(keep, turnsOnly), of(keep, withDerived)];
      return `  ${label.padEnd(14)} ${pct(a).padStart(5)} / ${pct(b).padStart(5)}  (${b >= a ? "+" : ""}${pct(b - a)})`;
    }),
  ];
}

/** A search hit as the search tool answers it, in the fields the bench's credit reads. */
function asResult(h: SearchHit) {
  return {
    item_id: h.itemId,
    derived: h.derived !== null,
    sources: h.derived?.sources ?? [],
    folded_sources: (h.foldedSources ?? []).map((f) => ({ item_id: f.itemId })),
  };
}

/** The stored turns by item id, as the bench keeps them: found by their conversation and text, with their time. */
function storedTurns(db: DatabaseSync, tenant: string, samples: LocomoSample[]): Map<string, StoredTurn> {
  const diaOf = new Map<string, string>();
  for (const s of samples) {
    const c = s.conversation as Record<string, unknown>;
    for (let n = 1; Array.isArray(c[`session_${n}`]); n++)
      for (const turn of c[`session_${n}`] as { dia_id: string; text: string; blip_caption?: string }[])
        diaOf.set(
          `${s.sample_id}:session_${n}\u0000${turn.blip_caption ? `${turn.text} [shares a photo: ${turn.blip_caption}]` : turn.text}`,
          turn.dia_id,
        );
  }
  const turns = new Map<string, StoredTurn>();
  const rows = db
    .prepare(
      "SELECT id, project, conversation_id, content, created_at FROM items WHERE tenant_id = ? AND conversation_id IS NOT NULL",
    )
    .all(tenant) as { id: string; project: string; conversation_id: string; content: string; created_at: number }[];
  for (const r of rows) {
    const dia = diaOf.get(`${r.conversation_id}\u0000${r.content}`);
    if (dia) turns.set(r.id, { dia, speaker: "", at: r.created_at, project: r.project });
  }
  return turns;
}
