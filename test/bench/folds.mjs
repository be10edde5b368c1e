// k-fold by conversation, "as if held out": the search constants were tuned looking at all of LoCoMo, so
// no fold is truly unseen; what the folds show is how much each figure varies from one conversation to
// the next. Each fold in turn is the validation fold and the others the tuning folds. The figures come
// from per-question scores a suite already has (R@10 per question), so nothing is asked again.
import { fmt, mean } from "./metrics.mjs";

/** k folds of consecutive samples, by sample index: k = 5 (one conversation a fold when there are 5). */
export function assignFolds(samples, k = Math.min(5, samples.length)) {
  const foldOf = new Map(samples.map((s, i) => [s.sample_id, Math.floor((i * k) / samples.length)]));
  const members = Array.from({ length: k }, (_, f) =>
    samples.filter((s) => foldOf.get(s.sample_id) === f).map((s) => s.sample_id),
  );
  return { k, foldOf, members };
}

/** The groups every figure is given for: all questions, then each category. */
export function groupsOf(categories) {
  return {
    all: () => true,
    ...Object.fromEntries(
      Object.entries(categories).map(([cat, label]) => [label, (qa) => String(qa.category) === cat]),
    ),
  };
}

/** Per fold, per group: the mean score on the held-out fold (validation) and on the other folds (tuning). */
export function foldFigures(questions, scores, folds, groups) {
  return Array.from({ length: folds.k }, (_, f) => {
    const figure = (heldOut, inGroup) =>
      mean(
        questions.flatMap((qa, i) =>
          (folds.foldOf.get(qa.project) === f) === heldOut && inGroup(qa) ? [scores[i]] : [],
        ),
      );
    const each = (heldOut) =>
      Object.fromEntries(Object.entries(groups).map(([name, inGroup]) => [name, figure(heldOut, inGroup)]));
    return { validation: each(true), tuning: each(false) };
  });
}

/**
 * One group across folds: validation mean and spread, tuning mean, and the largest tuning - validation gap
 * of any fold. (The mean gap says nothing: every question is in one validation fold and k - 1 tuning
 * folds, so the two means are near equal by construction; the fold-by-fold gaps are the spread.)
 */
export function summarize(figures, group) {
  const pairs = figures.map((f) => [f.validation[group], f.tuning[group]]).filter(([v]) => Number.isFinite(v));
  const validation = pairs.map(([v]) => v);
  const gaps = pairs.map(([v, t]) => t - v);
  return {
    validation: mean(validation),
    min: Math.min(...validation),
    max: Math.max(...validation),
    tuning: mean(pairs.map(([, t]) => t)),
    worstGap: gaps.reduce((worst, g) => (Math.abs(g) > Math.abs(worst) ? g : worst), 0),
    folds: validation.length,
  };
}

const points = (x) => fmt(x * 100, 1);
const signed = (x) => (Number.isFinite(x) ? `${x >= 0 ? "+" : ""}${points(x)}` : "n/a");

/** The plain report: R@10 held out / other folds, fold by fold, then the mean over validation folds. */
export function foldReportLines(figures, folds, groups) {
  const names = Object.keys(groups);
  const sizes = [...new Set(folds.members.map((m) => m.length))].join(" or ");
  const lines = [
    `  k-fold by conversation: ${folds.k} folds of ${sizes} conversation(s), by sample index; R@10 (%) held-out fold / other folds`,
  ];
  lines.push(`    ${"fold".padEnd(18)}${names.map((n) => n.slice(0, 13).padStart(14)).join("")}`);
  figures.forEach((f, i) => {
    const label = `${i + 1} ${folds.members[i].join(",")}`;
    lines.push(
      `    ${label.padEnd(18)}${names.map((n) => `${points(f.validation[n])} / ${points(f.tuning[n])}`.padStart(14)).join("")}`,
    );
  });
  const all = names.map((n) => summarize(figures, n));
  lines.push(`    ${"validation mean".padEnd(18)}${all.map((s) => points(s.validation).padStart(14)).join("")}`);
  lines.push(
    `    ${"  min-max".padEnd(18)}${all.map((s) => `${points(s.min)}-${points(s.max)}`.padStart(14)).join("")}`,
  );
  lines.push(`    ${"tuning mean".padEnd(18)}${all.map((s) => points(s.tuning).padStart(14)).join("")}`);
  lines.push(`    ${"largest tun-val".padEnd(18)}${all.map((s) => signed(s.worstGap).padStart(14)).join("")}`);
  return lines;
}

/** A contribution generalizes when its mean over held-out folds is > 0 and it is negative on at most half of them. */
export function generalizes(contributions) {
  const known = contributions.filter(Number.isFinite);
  return mean(known) > 0 && !hurtsOnMost(known);
}

const hurtsOnMost = (known) => known.filter((c) => c < 0).length > known.length / 2;

/**
 * One stage switched off: its R@10 contribution (all-on minus stage-off, points) on each held-out fold.
 * The stage is judged on all questions; a category is marked only where the stage costs it (mean < 0,
 * or negative on more than half the folds), as a stage for one kind of question leaves the others at 0.
 */
export function contributionLines(label, withAll, without, groups) {
  const lines = [
    `    ${label.padEnd(22)}${withAll.map((_, f) => `fold ${f + 1}`.padStart(8)).join("")}${"mean".padStart(8)}`,
  ];
  for (const name of Object.keys(groups)) {
    const each = withAll.map((f, i) => f.validation[name] - without[i].validation[name]);
    const known = each.filter(Number.isFinite);
    const verdict =
      name === "all"
        ? generalizes(known)
          ? "  generalizes"
          : "  DOES NOT GENERALIZE"
        : mean(known) < 0 || hurtsOnMost(known)
          ? "  (costs this category)"
          : "";
    lines.push(
      `      ${name.padEnd(20)}${each.map((c) => signed(c).padStart(8)).join("")}${signed(mean(each.filter(Number.isFinite))).padStart(8)}${verdict}`,
    );
  }
  return lines;
}
