// What the qa suite needs besides the models: the context as the answerer reads it, the strict judge (token F1,
// no model), abstention, and the scripted stand-ins BENCH_QA_FAKE=1 runs in place of an answerer and a judge.

const DAY = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });

/**
 * memory_context_build's memories as lines: a stored turn with its speaker and day (the bench knows them from its
 * ingest; the tool gives a message's text only, and temporal questions need the day), a derived memory with the day
 * it became true.
 */
export function contextText(memories, turns) {
  return memories
    .map((m) => {
      const turn = turns.get(m.id);
      if (turn) return `- [${DAY.format(turn.at)}] ${turn.speaker}: ${m.content}`;
      const from = m.valid_from ? `[${DAY.format(Date.parse(m.valid_from))}] ` : "";
      return `- ${from}${m.content}`;
    })
    .join("\n");
}

/** SQuAD's normalization: lower case, no punctuation, no articles, tokens on white space. */
export function normalizedTokens(text) {
  return String(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, " ")
    .split(/\s+/)
    .filter((t) => t && !["a", "an", "the"].includes(t));
}

/** Token F1 of an answer against the gold answer. */
export function tokenF1(answer, gold) {
  const said = normalizedTokens(answer);
  const wanted = normalizedTokens(gold);
  const left = new Map();
  for (const t of wanted) left.set(t, (left.get(t) ?? 0) + 1);
  let common = 0;
  for (const t of said)
    if ((left.get(t) ?? 0) > 0) {
      common++;
      left.set(t, left.get(t) - 1);
    }
  if (common === 0) return 0;
  const precision = common / said.length;
  const recall = common / wanted.length;
  return (2 * precision * recall) / (precision + recall);
}

/** The strict judge: normalized token F1 ≥ 0.5 against the gold answer. */
export const strictCorrect = (answer, gold) => tokenF1(answer, gold) >= 0.5;

/** Whether an answer declines: 'not mentioned' or the usual ways of saying it. */
export function abstained(answer) {
  return /\bnot (mentioned|stated|specified|say|said)\b|\bno (information|mention)\b|\bdoes(n't| not) say\b|\bunknown\b|\bcannot be determined\b/i.test(
    answer,
  );
}

const STOP = new Set(
  "a an the is are was were be been did do does what when where who whom which why how of in on at to for with and or by from her his their its my your i you he she they it that this as about".split(
    " ",
  ),
);
const contentWords = (text) => new Set(normalizedTokens(text).filter((t) => !STOP.has(t)));

/** BENCH_QA_FAKE's answerer: the context line sharing the most content words with the question, or 'not mentioned'. */
export async function scriptedAnswerer({ question, context }) {
  const asked = contentWords(question);
  let best = { line: "not mentioned", shared: 1 };
  for (const line of context.split("\n")) {
    const shared = [...contentWords(line)].filter((w) => asked.has(w)).length;
    if (shared > best.shared) best = { line: line.replace(/^- (\[[^\]]*\] )?/, ""), shared };
  }
  return best.line;
}

/** BENCH_QA_FAKE's lenient judge: CORRECT when the answer holds every content word of the gold answer. */
export async function scriptedJudge({ gold, answer }) {
  const said = contentWords(answer);
  const wanted = [...contentWords(gold)];
  return wanted.length > 0 && wanted.every((w) => said.has(w));
}
