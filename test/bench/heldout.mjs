// The `heldout` suite (issue 32, "evaluate as if held out"): LoCoMo with its report by held-out fold of
// conversations, then the MS MARCO sample, in one worker; then the targets, each MET or NOT MET.
// It measures only: the targets are the issue's, not a reason to tune search here.
import { summarize } from "./folds.mjs";
import { CATEGORIES, measureLocomo } from "./locomo.mjs";
import { fmt, pct } from "./metrics.mjs";
import { measureMsmarco } from "./msmarco.mjs";

export async function runHeldout(newTenant) {
  const locomo = await measureLocomo(newTenant);
  const msmarco = await measureMsmarco(newTenant);
  return [...locomo.lines, "", ...msmarco.lines, "", ...targetLines(locomo, msmarco)];
}

function targetLines(locomo, msmarco) {
  const all = summarize(locomo.folds, "all");
  const categories = Object.values(CATEGORIES).map((name) => [name, summarize(locomo.folds, name)]);
  const gaps = categories
    .map(([name, s]) => `${name} ${s.worstGap >= 0 ? "+" : ""}${fmt(s.worstGap * 100, 1)}`)
    .join(", ");
  const category = (name) => categories.find(([n]) => n === name)[1].validation;
  const lift = msmarco.ndcg.hybrid - msmarco.ndcg.bm25;
  const rows = [
    [
      `LoCoMo R@10, mean of ${all.folds} validation folds (min-max ${pct(all.min)}-${pct(all.max)})`,
      `${pct(all.validation)}%`,
      ">= 82%",
      all.validation >= 0.82,
    ],
    [
      `every category within 5 points of its tuning folds on every fold (largest tuning - validation): ${gaps}`,
      "",
      "|gap| <= 5",
      categories.every(([, s]) => Math.abs(s.worstGap) <= 0.05),
    ],
    [
      "multi-hop R@10, mean of validation folds",
      `${pct(category("multi-hop"))}%`,
      ">= 50%",
      category("multi-hop") >= 0.5,
    ],
    ["temporal R@10, mean of validation folds", `${pct(category("temporal"))}%`, ">= 80%", category("temporal") >= 0.8],
    [
      `MS MARCO nDCG@10 hybrid ${fmt(msmarco.ndcg.hybrid, 3)} - plain BM25 ${fmt(msmarco.ndcg.bm25, 3)}`,
      `${lift >= 0 ? "+" : ""}${fmt(lift, 3)}`,
      ">= +0.030",
      lift >= 0.03,
    ],
    [
      "search server p50 (get_usage_report, LoCoMo hybrid)",
      `${fmt(locomo.served.p50_ms)} ms`,
      "<= 8 ms",
      locomo.served.p50_ms <= 8,
    ],
    [
      "abstention, hybrid search, both unrelated sets",
      `${pct(locomo.abstention)}%`,
      ">= 90%",
      locomo.abstention >= 0.9,
    ],
  ];
  const lines = ["Targets (issue 32), LoCoMo by held-out fold of conversations"];
  for (const [what, value, target, met] of rows)
    lines.push(`  ${met ? "MET    " : "NOT MET"}  ${value.padStart(9)}  ${target.padEnd(11)} ${what}`);
  return lines;
}
