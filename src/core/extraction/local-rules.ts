import { ModelError } from "../../errors";
import type { JsonAnswer, JsonModel, JsonRequest } from "../../ports";
import { type FoundTime, findTimes, type Lean } from "../search/time-expressions";
import {
  type AnsweredMemory,
  KEY_MAX_CHARS,
  MEMORY_TEXT_MAX_CHARS,
  type MemoryKind,
  type PromptTurn,
  parsePrompt,
  SUBJECT_MAX_CHARS,
} from "./contract";

/**
 * The offline stand-in for memory extraction (LLM=local, the default under `npm run dev` and in tests): English rules
 * over each sentence of the turns to extract from, no model. It is weak by design: it sees only first-person
 * statements of a few fixed shapes and rewrites them word by word, where a model understands the conversation;
 * docs/extraction.md says what it catches and misses. Deterministic: the same prompt, the same answer.
 */
export class LocalRulesModel implements JsonModel {
  readonly name = "local-rules";

  async generate(request: JsonRequest): Promise<JsonAnswer> {
    const memories = localMemories(request.prompt);
    // Not a real model: its "tokens" are characters / 4, rounded up, so budgets and usage records see plausible sizes.
    const tokensIn = Math.ceil((request.system.length + request.prompt.length) / 4);
    const tokensOf = (value: unknown) => Math.ceil(JSON.stringify(value).length / 4);
    if (tokensOf({ memories: [] }) > request.maxTokens)
      throw new ModelError("output", `local-rules: maxTokens ${request.maxTokens} cannot hold even an empty answer`);
    // A real model runs out mid-answer; the stand-in stops after the last whole memory that fits.
    while (tokensOf({ memories }) > request.maxTokens) memories.pop();
    const content = { memories };
    return { content, tokensIn, tokensOut: tokensOf(content), neurons: 0 };
  }
}

/**
 * The memories the rules find in an extraction prompt (contract.ts): from the turns under "Turns to extract from"
 * only, one sentence (or clause joined by ", and I" / ", but I" / ";") at a time, each about the turn's speaker
 * and sourced to that turn alone. Rules, the first that matches a sentence wins:
 * - task: "remind me to X", "I need to / have to / must / have got to X" (a relative time in it resolved to a date);
 * - instruction: an imperative ("Always", "Never", "Please", "Don't", "Do not", "remember to", "make sure to"),
 *   optionally after a condition ("When I ask for code, ..."), when the speaker talks to the assistant (no other
 *   person speaks in the prompt): "<speaker> wants the assistant to ...";
 * - event: a first-person (I, we, "my X and I", "my X") past or future sentence naming a time findTimes resolves
 *   against the turn's timestamp; `when` is the day the time starts ("two weeks ago": the day it is centred on) and
 *   the time words leave the text; a dated "I moved to <Place>" is also the home_city fact;
 * - task: "I'm going to X" with no time;
 * - fact: "my name is X" (name), "I'm N (years old)" (age), "I live in / moved to X" (home_city when X is a
 *   capitalised place, else no key), "I work as X" (occupation), "I work at/for X" (employer), "I'm a/an X"
 *   (occupation when X's head noun is an occupation, else no key), "my <noun phrase> is X" (key: the noun phrase
 *   in snake_case, none for people and pets or in the past tense), "I have a/an/<number> X" (no key);
 * - preference: "I love/like/enjoy/prefer/adore/hate/dislike/can't stand/don't like X", "I'm a fan of / into X"
 *   (no key), "my favorite X is Y" (key favorite_x: a preference, as the contract counts choices, not a fact).
 * Questions, greetings, sentences addressed to "you" (other than instructions) and turns of fewer than three words
 * or said by the assistant are left out, as is every sentence no rule matches; no memory twice.
 */
export function localMemories(prompt: string): AnsweredMemory[] {
  const parsed = parsePrompt(prompt);
  const people = new Set(parsed.map((p) => p.turn.speaker.toLowerCase()).filter((s) => !MACHINE_SPEAKER.test(s)));
  const seen = new Set<string>();
  const memories: AnsweredMemory[] = [];
  for (const { turn, extract } of parsed) {
    if (!extract || MACHINE_SPEAKER.test(turn.speaker) || words(turn.text).length < 3) continue;
    const context: TurnContext = {
      turn,
      name: turn.speaker.toLowerCase() === "user" ? "the user" : turn.speaker,
      // Imperatives are for the assistant only when no other person is in the conversation to hear them.
      toAssistant: [...people].every((p) => p === turn.speaker.toLowerCase()),
    };
    for (const sentence of sentencesOf(normalized(turn.text))) {
      for (const memory of memoriesOf(sentence, context)) {
        const id = [memory.type, memory.subject, normalizedText(memory.text)].join("\u0000");
        if (seen.has(id)) continue;
        seen.add(id);
        memories.push(memory);
      }
    }
  }
  return memories;
}

/** A text as duplicates compare: its words, lowercased. */
const normalizedText = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim();

interface TurnContext {
  turn: PromptTurn;
  /** How the text names the speaker: their name, or "the user". */
  name: string;
  toAssistant: boolean;
}

const DAY = 86_400_000;
/** Speakers whose own "I" is no person's memory. */
const MACHINE_SPEAKER = /^(?:assistant|system|ai|bot|model|tool)$/i;

const ADVERBS = [
  "really",
  "also",
  "just",
  "still",
  "now",
  "only",
  "then",
  "already",
  "always",
  "never",
  "often",
  "sometimes",
  "even",
  "ever",
  "too",
  "so",
  "kinda",
  "sorta",
  "kind of",
  "sort of",
];
/** Verbs that end in -ly; any other word that does is an adverb ("totally", "usually"). */
const LY_VERBS = ["fly", "apply", "reply", "rely", "supply", "comply", "imply", "multiply", "ally", "bully", "rally"];
/** Adverbs between a subject and its verb, as a regex fragment (each followed by space). */
const ADV = `(?:(?:${ADVERBS.join("|").replace(/ /g, "\\s+")}|(?!(?:${LY_VERBS.join("|")})\\b)[a-z]{3,}ly)\\s+)*`;

const isAdverb = (word: string) => {
  const w = word.toLowerCase();
  return ADVERBS.includes(w) || (/^[a-z]{3,}ly$/.test(w) && !LY_VERBS.includes(w));
};

const IRREGULAR_PAST = new Set(
  (
    "arose awoke was were bore beat became began bent bit bled blew broke brought built burnt bought caught chose " +
    "came cost crept cut dealt dug did drew dreamt drank drove ate fell fed felt fought found fled flew forgot forgave " +
    "froze got gave went grew hung had heard hid hit held hurt kept knew laid led leant learnt left lent let lit lost " +
    "made meant met paid put quit read rode rang rose ran said saw sought sold sent set shook shot showed shut sang " +
    "sank sat slept slid spoke sped spent split spread stood stole stuck struck swore swept swam swung took taught " +
    "tore told thought threw understood woke wore won wrote"
  ).split(" "),
);
const isPast = (word: string) => {
  const w = word.toLowerCase();
  return IRREGULAR_PAST.has(w) || /^[a-z]{2,}(?:[^e]ed|ied)$/.test(w);
};
/** Words after "I" that take no -s: modals, past forms, words that are no verb. */
const NOT_CONJUGATED = new Set(
  (
    "can could will would shall should must might may ought gotta gonna wanna used " +
    "to and or but who that which as in on at with for the a an myself alone too was"
  ).split(" "),
);

/** A present-tense verb after "I" in the third person: love -> loves, go -> goes, have -> has. */
function conjugate(verb: string): string {
  const w = verb.toLowerCase();
  if (w === "am" || w === "are") return "is";
  if (w === "have") return "has";
  if (w === "don't") return "doesn't";
  if (!/^[a-z]+$/.test(verb) || NOT_CONJUGATED.has(w) || isPast(w)) return verb;
  if (/(?:s|sh|ch|x|z|o)$/.test(w)) return `${verb}es`;
  if (/[^aeiou]y$/.test(w)) return `${verb.slice(0, -1)}ies`;
  return `${verb}s`;
}

/** Words before "you" after which it is a subject ("when you write" -> "when the assistant writes"). */
const BEFORE_SUBJECT = new Set(
  "when whenever if unless that because before after and but so as while once until".split(" "),
);

/**
 * The sentence in the third person about the speaker, word by word: I -> <name>, I'm -> <name> is, I've -> <name>
 * has, my -> <name>'s, me -> <name>, we -> <name> and others, a present verb after I takes its -s. With `assistant`
 * (instructions), you -> the assistant, your -> its.
 */
function thirdPerson(text: string, name: string, assistant = false): string {
  const tokens = text.match(/[A-Za-z0-9]+(?:'[A-Za-z]+)*|[^A-Za-z0-9]+/g) ?? [];
  const possessive = `${name}'s`;
  const group = `${name} and others`;
  const out: string[] = [];
  let conjugateNext = false;
  let previous = "";
  /** The words since the last punctuation: is "and I" a compound subject ("my husband and I went")? */
  let clause: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!/^[A-Za-z0-9]/.test(token)) {
      if (!/^\s+$/.test(token)) {
        conjugateNext = false;
        clause = [];
      }
      out.push(token);
      continue;
    }
    const lower = token.toLowerCase();
    let word = token;
    let subject = false;
    if (conjugateNext) {
      const kindOf =
        ((lower === "kind" || lower === "sort") && tokens[i + 2]?.toLowerCase() === "of") ||
        (lower === "of" && (previous === "kind" || previous === "sort"));
      if (isAdverb(token) || kindOf) {
        out.push(token);
        previous = lower;
        clause.push(token);
        continue;
      }
      word = conjugate(token);
      conjugateNext = false;
    } else if (token === "I") {
      word = name;
      subject = !((previous === "and" || previous === "or") && compoundSubject(clause.slice(0, -1)));
    } else if (token === "I'm") word = `${name} is`;
    else if (token === "I've") word = `${name} has`;
    else if (token === "I'll") word = `${name} will`;
    else if (token === "I'd") word = `${name} would`;
    else if (lower === "my" || lower === "mine") word = possessive;
    else if (lower === "me") word = name;
    else if (lower === "myself") word = "themself";
    else if (lower === "we" || token === "us") word = group;
    else if (lower === "we're") word = `${group} are`;
    else if (lower === "we've") word = `${group} have`;
    else if (lower === "we'll") word = `${group} will`;
    else if (lower === "we'd") word = `${group} would`;
    else if (lower === "our" || lower === "ours") word = possessive;
    else if (lower === "ourselves") word = "themselves";
    else if (assistant && lower === "you") {
      word = "the assistant";
      subject = previous === "" || BEFORE_SUBJECT.has(previous);
    } else if (assistant && (lower === "you're" || lower === "you've" || lower === "you'll" || lower === "you'd"))
      word = `the assistant ${{ "you're": "is", "you've": "has", "you'll": "will", "you'd": "would" }[lower]}`;
    else if (assistant && (lower === "your" || lower === "yours")) word = "its";
    else if (assistant && lower === "yourself") word = "itself";
    out.push(word);
    conjugateNext = subject;
    previous = lower;
    clause.push(token);
  }
  return out.join("");
}

// --- sentences ---

/** Curly apostrophes straight, and chat's lowercase "i" as "I". */
function normalized(text: string): string {
  return text.replace(/[\u2018\u2019]/g, "'").replace(/\bi(?=['\s,!?;:]|\.(?![a-z])|$)/g, "I");
}

const words = (text: string) => text.match(/[A-Za-z0-9']+/g) ?? [];

/** Where a full stop does not end a sentence. */
const ABBREVIATION = /^(?:mr|mrs|ms|dr|st|jr|sr|prof|vs|etc|e\.g|i\.e|approx|[A-HJ-Z])$/i;

/** A turn's sentences, and within one its clauses joined by ", and I" / ", but I" / ", so I" or ";". */
function sentencesOf(text: string): string[] {
  const sentences: string[] = [];
  let start = 0;
  for (const end of text.matchAll(/[.!?\u2026]+["')\]]*(?=\s|$)/g)) {
    const before = /(\S+)$/.exec(text.slice(start, end.index))?.[1] ?? "";
    if (end[0] === "." && ABBREVIATION.test(before)) continue;
    sentences.push(text.slice(start, end.index + end[0].length));
    start = end.index + end[0].length;
  }
  sentences.push(text.slice(start));
  return sentences
    .flatMap((s) => s.split(/;\s+|,\s+(?:and|but|so)\s+(?=(?:I|I'm|I've|my|My)\b)/))
    .flatMap(clausesOf)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** "I love jazz and I hate rain": two clauses; "my husband and I went": one subject. */
function clausesOf(sentence: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (const join of sentence.matchAll(/\s+(?:and|but)\s+(?=(?:I|I'm|I've)\b)/g)) {
    if (compoundSubject(words(sentence.slice(start, join.index)))) continue;
    parts.push(sentence.slice(start, join.index));
    start = join.index + join[0].length;
  }
  parts.push(sentence.slice(start));
  return parts;
}

/** Whether the words before "and I" name others beside the speaker: a few words, "my ..." or a name, no verb. */
function compoundSubject(before: string[]): boolean {
  const first = before[0] ?? "";
  return (
    before.length > 0 &&
    before.length <= 5 &&
    (/^(?:my|our|me)$/i.test(first) || (/^[A-Z]/.test(first) && !/^I\b/.test(first))) &&
    !before.some((w) => /^(?:is|are|was|were|am|has|have|had)$/i.test(w) || isPast(w))
  );
}

/** Greetings and fillers at a sentence's start ("Hey Mel!", "Oh,", "So", "I think"). */
const LEAD_IN = new RegExp(
  "^(?:(?:hi|hey|hello|hiya|howdy|thanks|good\\s+(?:morning|afternoon|evening|night))" +
    "(?:\\s+(?:there|all|everyone|guys|[A-Za-z][\\w'-]*))?\\s*[,!.:;-]+\\s*" +
    "|(?:hi|hey|hello|oh|ah|aw+|well|so|yeah|yes|yep|yup|no|nope|ok|okay|wow|ha(?:ha)*|lol|um|uh|hmm|actually|" +
    "honestly|anyway|anyways|also|and|but|plus|btw|by\\s+the\\s+way|guess\\s+what|fun\\s+fact|I\\s+mean|" +
    "I\\s+think(?:\\s+that)?|I\\s+guess|I\\s+believe|to\\s+be\\s+honest|tbh)\\b[\\s,!:;.-]*)+",
  "i",
);
const QUESTION_START =
  /^(?:(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|had|may|might)\s+(?:I|you|we|they|he|she|it|there|my|your)\b|(?:what|who|whom|whose|which|why|how)\b)/i;
const YOU = /\b(?:you|your|yours|yourself|yourselves|you're|you've|you'll|you'd|u|ya)\b/i;

// --- times ---

/** Times that name no day to date an event by. */
const VAGUE = /^(?:recently|lately|the\s+other\s+(?:day|night))$/i;
/** A time of one word that the grammar reads alone ("Sunday" in "Sunday brunch"): not the sentence's date if another is named. */
const bare = (t: FoundTime) => /^[A-Za-z]+\.?$/.test(t.text) && !/^(?:yesterday|today|tonight|tomorrow)$/i.test(t.text);
/** The time that dates a sentence: its first, unless that is a bare one and another is named. */
const chosenTime = (times: FoundTime[]) => times.find((t) => !bare(t)) ?? times[0] ?? null;
/** "two weeks ago", "in three days": a range centred on the day it names. */
const centred = (t: FoundTime) =>
  /\b(?:ago|back|before\s+(?:now|today))$|^in\s+\S+(?:\s+\S+)?\s+(?:day|week|month|year)s?\b/i.test(t.text);
const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);
const startOfDay = (at: number) => Math.floor(at / DAY) * DAY;
const MONTHS = "January February March April May June July August September October November December".split(" ");

/** The day a time means for `when`: where its range starts, or the day a centred one is centred on. */
function dayOf(t: FoundTime): string {
  return isoDay(centred(t) ? startOfDay((t.from + t.to) / 2) : t.from);
}

/** A time as words that need no "now": "on 2023-05-07", "in the week of 2023-05-01", "in May 2023". */
function labelOf(t: FoundTime): string {
  const from = new Date(t.from);
  const length = t.to - t.from;
  if (centred(t)) return `around ${dayOf(t)}`;
  if (length === DAY) return `on ${isoDay(t.from)}`;
  if (length === 7 * DAY && from.getUTCDay() === 1) return `in the week of ${isoDay(t.from)}`;
  if (length === 2 * DAY && from.getUTCDay() === 6) return `on the weekend of ${isoDay(t.from)}`;
  const y = from.getUTCFullYear();
  const m = from.getUTCMonth();
  if (t.from === Date.UTC(y, m, 1) && t.to === Date.UTC(y, m + 1, 1)) return `in ${MONTHS[m]} ${y}`;
  if (t.from === Date.UTC(y, 0, 1) && t.to === Date.UTC(y + 1, 0, 1)) return `in ${y}`;
  return `between ${isoDay(t.from)} and ${isoDay(t.to - DAY)}`;
}

/** The sentence without the times (and a preposition left before one): an event's text, its date in `when`. */
function withoutTimes(text: string, times: FoundTime[]): string {
  let out = text;
  for (const t of [...times].sort((a, b) => b.index - a.index)) {
    const before =
      /\b(?:since|from|until|till|by|before|after|around|about|during|for|in|on|at|of|over)\s+$/i.exec(
        out.slice(0, t.index),
      )?.[0] ?? "";
    out = `${out.slice(0, t.index - before.length)} ${out.slice(t.index + t.text.length)}`;
  }
  return tidy(out);
}

/**
 * The sentence with each relative time replaced by the dates it means ("tomorrow" -> "on 2023-05-09"); a time that
 * opens the sentence moves to its end, so the rules still see the sentence start with its subject.
 */
function withResolvedTimes(text: string, times: FoundTime[]): string {
  let out = text;
  let tail = "";
  for (const t of [...times].sort((a, b) => b.index - a.index)) {
    if (/\d{4}/.test(t.text) || bare(t)) continue;
    let label = labelOf(t);
    const own = /^(since|from|until|till|by|before|after|early|late|mid|back\s+in)\b[\s-]*/i.exec(t.text);
    const lead = /\b(?:since|from|until|till|by|before|after|through)\s+$/i.test(out.slice(0, t.index));
    if (own || lead) label = label.startsWith("between ") ? isoDay(t.from) : label.replace(/^(?:on|in|around)\s+/, "");
    if (own) label = `${own[1]!.toLowerCase()} ${label}`;
    if (t.index === 0) {
      out = out.slice(t.text.length).replace(/^\s*,?\s*/, "");
      tail = ` ${label}${tail}`;
    } else out = `${out.slice(0, t.index)}${label}${out.slice(t.index + t.text.length)}`;
  }
  return tidy(out + tail);
}

function tidy(text: string): string {
  return text
    .replace(/\s+([,.;:!?])/g, "$1")
    .replace(/,+(?=\s*(?:[,.;:!?]|$))/g, "")
    .replace(/^[\s,;:-]+/, "")
    .replace(/\s{2,}/g, " ")
    .trim();
}

// --- events ---

type Tense = "past" | "future" | "progressive" | "present" | "be" | "other";

/** The tense of a first-person sentence (I, we, "my X and I", "my X ..."); null when it has no such subject. */
function tenseOf(clause: string): { tense: Tense; possessive: boolean } | null {
  const w = words(clause).map((x) => x.toLowerCase());
  let i = 0;
  if (w[0] === "my" || w[0] === "our") {
    const and = w.findIndex((x, k) => k > 1 && k <= 6 && (x === "i" || x === "we") && w[k - 1] === "and");
    if (and < 0) {
      // "my sister visited", "my birthday is": the first verb within five words.
      for (let k = 1; k <= 5 && k < w.length; k++) {
        const v = w[k]!;
        if (v === "is" || v === "are") return { tense: beTense(w, k + 1), possessive: true };
        if (v === "will") return { tense: "future", possessive: true };
        if (isPast(v)) return { tense: "past", possessive: true };
      }
      return null;
    }
    i = and;
  }
  const subject = w[i];
  if (subject === "i'm" || subject === "we're") return { tense: beTense(w, i + 1), possessive: false };
  if (subject === "i'll" || subject === "we'll") return { tense: "future", possessive: false };
  if (subject === "i've" || subject === "we've")
    return { tense: w[i + 1] === "got" ? "present" : "other", possessive: false };
  if (subject !== "i" && subject !== "we") return null;
  i++;
  while (i < w.length && isAdverb(w[i]!)) i++;
  const verb = w[i] ?? "";
  if (verb === "am" || verb === "are") return { tense: beTense(w, i + 1), possessive: false };
  if (verb === "will" || verb === "shall" || verb === "won't" || verb === "plan" || verb === "intend")
    return { tense: "future", possessive: false };
  if (verb === "have") {
    const next = w[i + 1] ?? "";
    return { tense: next === "been" || (next !== "got" && isPast(next)) ? "other" : "present", possessive: false };
  }
  if (/^(?:was|were|had|did|didn't|wasn't|weren't|used)$/.test(verb) || isPast(verb))
    return { tense: "past", possessive: false };
  if (/^(?:can|could|would|should|must|might|may|i'd|'d)$/.test(verb) || verb === "")
    return { tense: "other", possessive: false };
  return { tense: "present", possessive: false };
}

/** After am/are/is: "going to", "about to" -> future; "-ing" -> progressive; anything else -> be. */
function beTense(w: string[], i: number): Tense {
  while (i < w.length && isAdverb(w[i]!)) i++;
  const next = w[i] ?? "";
  if (next === "going" || next === "gonna" || next === "about") return "future";
  return /^[a-z]{2,}ing$/.test(next) ? "progressive" : "be";
}

/** A sentence with a time states an event when it is past or future, or present about today or later: its tense. */
function eventTense(clause: string, time: FoundTime, said: number): Tense | null {
  const found = tenseOf(clause);
  if (!found) return null;
  const laterOrToday = time.from >= startOfDay(said);
  switch (found.tense) {
    case "past":
    case "future":
      return found.tense;
    case "progressive":
    case "present":
      return laterOrToday ? found.tense : null;
    case "be":
      return found.possessive && laterOrToday ? found.tense : null;
    default:
      return null;
  }
}

// --- rules ---

const I_AM = "I(?:'m|\\s+am)\\s+";
const REMIND = /^(?:please\s+)?(?:just\s+)?remind\s+me\s+(to|that|about)\s+(.+)$/i;
const TASK = new RegExp(
  `^I(?:'ve\\s+got\\s+to|\\s+${ADV}(?:need\\s+to|have\\s+to|have\\s+got\\s+to|must|gotta))\\s+(.+)$`,
  "i",
);
const TASK_NOT = /^(?:say|admit|agree|confess|tell|thank|ask|be\s+honest|go(?:\s+now)?$|run$|leave$|sleep$)/i;
const GOING_TO = new RegExp(`^${I_AM}${ADV}(?:going\\s+to|gonna)\\s+(.+)$`, "i");
/** "going to the park", "going to bed": a place, not a plan. */
const GOING_PLACE =
  /^(?:the|a|an|my|our|his|her|their|this|that|some|bed|school|work$|church|class|college|university|sleep$)\b/i;
const NAME = /^my\s+name(?:'s|\s+is)\s+(.+)$/i;
const AGE = new RegExp(`^${I_AM}(\\d{1,3})(?:\\s+years?\\s+old)?$`, "i");
const FAN = new RegExp(
  `^${I_AM}${ADV}(?:(?:a|such\\s+a)\\s+(?:(?:big|huge|massive|great|true)\\s+)?fan\\s+of|into|obsessed\\s+with|passionate\\s+about|crazy\\s+about|fond\\s+of|keen\\s+on)\\s+(.+)$`,
  "i",
);
const LIVE = new RegExp(`^I(?:\\s+${ADV}live|(?:'m|\\s+am)\\s+${ADV}(?:living|based|staying))\\s+in\\s+(.+)$`, "i");
const MOVED = new RegExp(`^I(?:'ve|\\s+have)?\\s+${ADV}moved\\s+(?:back\\s+|here\\s+|over\\s+)?to\\s+(.+)$`, "i");
const WORK = new RegExp(
  `^I(?:\\s+${ADV}work|(?:'m|\\s+am)\\s+${ADV}working)\\s+(as|at|for|in)\\s+(?:an?\\s+)?(.+)$`,
  "i",
);
const I_AM_A = new RegExp(`^${I_AM}${ADV}an?\\s+(.+)$`, "i");
const NOT_A = /^(?:bit|little|lot|few|couple)\b/i;
const FAVORITE = /^my\s+(?:absolute\s+|all-time\s+)?(favou?rite\s+(?:[\w'-]+\s+){0,2}?[\w'-]+)\s+(?:is|are)\s+(.+)$/i;
const ONE_OF_FAVORITES = /^one\s+of\s+my\s+favou?rite\s+/i;
const MY_IS = /^my\s+((?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(is|are|was|were)\s+(.+)$/i;
const HAVE = new RegExp(
  `^I(?:'ve\\s+got|\\s+${ADV}(?:have\\s+got|have|got))\\s+(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|\\d+)\\s+(.+)$`,
  "i",
);
const HAVE_NOT =
  /^(?:question|problem|feeling|idea|lot|bit|few|couple|good|great|nice|fun|wonderful|lovely|hard|tough|rough|busy|long|chance|minute|second|moment|look|point|suggestion|favou?r|doubt|thought|sec)\b/i;
const LIKE = new RegExp(
  `^I\\s+${ADV}(?:love|like|enjoy|prefer|adore|hate|dislike|detest|loathe|can't\\s+stand|cannot\\s+stand|can\\s+not\\s+stand|don't\\s+(?:like|enjoy)|do\\s+not\\s+(?:like|enjoy))\\s+(.+)$`,
  "i",
);
/** "I love it", "I like that", "I love how ...": nothing named to like. */
const LIKE_NOT =
  /^(?:(?:it|that|this|them|him|her|those|these)(?:\s+(?:so\s+much|a\s+lot|very\s+much|too|there|here))*$|(?:it|that|this)\s+when\b|(?:how|what|when|where|who|the\s+way)\b|to\s+(?:say|think|admit|hear|know|see)\b)/i;
/** People and pets: "my sister is a nurse" describes her, it is no value of the speaker's that a later one replaces. */
const RELATIONS = new Set(
  (
    "mom mum mother dad father parents parent sister brother sibling siblings son daughter kid kids child children " +
    "husband wife partner boyfriend girlfriend fiance fiancee friend friends family boss colleague coworker neighbor " +
    "neighbour grandma grandpa grandmother grandfather aunt uncle cousin niece nephew baby dog cat pet pets"
  ).split(" "),
);
const OCCUPATIONS = new Set(
  (
    "teacher nurse doctor physician surgeon dentist pharmacist engineer developer programmer designer artist writer " +
    "author journalist editor lawyer attorney accountant student chef cook baker musician photographer scientist " +
    "researcher professor lecturer tutor manager consultant pilot firefighter officer mechanic electrician plumber " +
    "carpenter farmer architect therapist counselor counsellor psychologist psychiatrist analyst librarian cashier " +
    "waiter waitress barista bartender salesperson entrepreneur founder ceo cto freelancer intern veterinarian vet " +
    "paramedic soldier actor actress dancer singer painter sculptor translator coach trainer instructor physicist " +
    "chemist biologist economist mathematician statistician administrator secretary receptionist clerk driver " +
    "technician programmer economist banker broker realtor caregiver nanny social-worker retiree"
  ).split(" "),
);

function memoriesOf(sentence: string, context: TurnContext): AnsweredMemory[] {
  const { turn, name } = context;
  if (/\?["')\]]*$/.test(sentence)) return [];
  const s = sentence
    .replace(LEAD_IN, "")
    .replace(/[\s.!\u2026]+$/, "")
    .trim();
  if (words(s).length < 2 || QUESTION_START.test(s)) return [];
  const timesOf = (lean: Lean) => findTimes(s, turn.at, lean).filter((t) => !VAGUE.test(t.text));
  let times = timesOf("nearest");
  let time = chosenTime(times);

  let event: { text: string; tense: Tense } | null = null;
  if (time) {
    const plain = withoutTimes(
      s,
      times.filter((t) => t === time || !bare(t)),
    );
    const tense = plain === "" ? null : eventTense(plain, time, turn.at);
    if (tense) event = { text: plain, tense };
    // "I painted it on 3 June", said in May: last June, as the past tense says, not the nearest.
    if (tense === "past" && times.some((t) => t.yearly)) {
      times = timesOf("past");
      time = chosenTime(times);
    }
  }
  const resolved = withResolvedTimes(s, times);
  const memory = (type: MemoryKind, key: string | null, text: string, when: string | null = null) =>
    finished({ type, subject: turn.speaker.slice(0, SUBJECT_MAX_CHARS), key, text, when, sources: [turn.ref] });
  const third = (text: string) => thirdPerson(text, name);
  const addressed = YOU.test(resolved);

  const remind = REMIND.exec(resolved);
  if (remind && !addressed)
    return memory("task", null, `${name} wants to be reminded ${remind[1]} ${third(remind[2]!)}`);
  const task = TASK.exec(resolved);
  if (task && !addressed && !TASK_NOT.test(task[1]!)) return memory("task", null, third(resolved));
  const instruction = instructionOf(resolved, context);
  if (instruction !== null) return memory("instruction", null, instruction);
  if (addressed) return [];

  if (event && time) {
    // "My birthday is next Friday": without its time the sentence says nothing; keep it, dates resolved.
    const text = /\b(?:is|are|was|were|be)$/i.test(event.text) ? resolved : event.text;
    const moved = MOVED.exec(event.text);
    return [
      ...memory("event", null, third(text), dayOf(time)),
      ...(moved && /^[A-Z]/.test(moved[1]!) ? memory("fact", "home_city", third(resolved)) : []),
    ];
  }
  const going = GOING_TO.exec(resolved);
  if (going && !GOING_PLACE.test(going[1]!)) return memory("task", null, third(resolved));

  const text = third(resolved);
  if (NAME.test(resolved)) return memory("fact", "name", text);
  if (AGE.test(resolved)) return memory("fact", "age", text);
  if (FAN.test(resolved) && !LIKE_NOT.test(FAN.exec(resolved)![1]!)) return memory("preference", null, text);
  const home = LIVE.exec(resolved) ?? MOVED.exec(resolved);
  if (home) return memory("fact", /^[A-Z]/.test(home[1]!) ? "home_city" : null, text);
  const work = WORK.exec(resolved);
  if (work) {
    const how = work[1]!.toLowerCase();
    return memory("fact", how === "as" ? "occupation" : how === "in" ? null : "employer", text);
  }
  const role = I_AM_A.exec(resolved);
  if (role && !NOT_A.test(role[1]!)) {
    const head = role[1]!
      .split(/\s+(?:at|in|for|with|from|who|and|of|on)\b|[,;]/)[0]!
      .trim()
      .split(/\s+/)
      .at(-1);
    return memory("fact", OCCUPATIONS.has(head?.toLowerCase() ?? "") ? "occupation" : null, text);
  }
  const favorite = FAVORITE.exec(resolved);
  if (favorite) return memory("preference", snakeKey(favorite[1]!), text);
  if (ONE_OF_FAVORITES.test(resolved)) return memory("preference", null, text);
  const mine = MY_IS.exec(resolved);
  if (mine && !/\band\b/i.test(mine[1]!)) {
    const head = mine[1]!.toLowerCase().replace(/'s$/, "").split(/\s+/).at(-1) ?? "";
    const past = /^(?:was|were)$/i.test(mine[2]!);
    return memory("fact", past || RELATIONS.has(head) ? null : snakeKey(mine[1]!), text);
  }
  const have = HAVE.exec(resolved);
  if (have && !HAVE_NOT.test(have[1]!)) return memory("fact", null, text);
  const like = LIKE.exec(resolved);
  if (like && !LIKE_NOT.test(like[1]!)) return memory("preference", null, text);
  return [];
}

/** Starts of an imperative; "never mind", "don't worry" are only manners. */
const IMPERATIVE = /^(?:(always|never)\s+|(don't|do\s+not)\s+|(?:remember|make\s+sure)\s+to\s+)/i;
const NOT_IMPERATIVE =
  /^(?:never\s+mind|(?:don't|do\s+not)\s+worry|no\s+worries|(?:don't|do\s+not)\s+mention\s+it)\b|^(?:I|we|it|this|that|there|he|she|they|my|our)\b/i;
/** A condition before an imperative: "When I ask for code, ...". */
const CONDITION = /^((?:when|whenever|if|unless|before|after|once|while)\b[^,]*),\s*/i;

/** An imperative for the assistant as "<name> wants the assistant to ..."; null when the sentence is none. */
function instructionOf(sentence: string, context: TurnContext): string | null {
  if (!context.toAssistant) return null;
  const asAssistant = (text: string) => thirdPerson(text, context.name, true);
  let body = sentence;
  const condition = CONDITION.exec(body);
  if (condition) body = body.slice(condition[0].length);
  let please = false;
  for (let m = /^(?:please|kindly|just)\b[\s,]*/i.exec(body); m; m = /^(?:please|kindly|just)\b[\s,]*/i.exec(body)) {
    if (/^please/i.test(m[0])) please = true;
    body = body.slice(m[0].length);
  }
  if (NOT_IMPERATIVE.test(body)) return null;
  let negative = false;
  const start = IMPERATIVE.exec(body);
  if (start?.[2]) {
    negative = true;
    body = body.slice(start[0].length);
  } else if (start?.[1]) {
    // "Always remember to answer in French": the reminder adds nothing.
    body = `${start[1].toLowerCase()} ${body.slice(start[0].length).replace(/^(?:remember|make\s+sure)\s+to\s+/i, "")}`;
  } else if (start) body = body.slice(start[0].length);
  else {
    const inner = /\b(?:remember|make\s+sure)\s+to\s+/i.exec(body);
    // "I always remember to ..." is the speaker's habit, not an instruction.
    if (inner && !/\b(?:I|we|he|she|they|you|it)\s+(?:\S+\s+){0,2}$/i.test(body.slice(0, inner.index)))
      body = body.slice(inner.index + inner[0].length);
    else if (!please) return null;
  }
  if (words(body).length === 0) return null;
  const rest = asAssistant(body).replace(/^([A-Z])(?=[a-z])/, (c) => c.toLowerCase());
  const when = condition ? `, ${asAssistant(condition[1]!).replace(/^[A-Z]/, (c) => c.toLowerCase())},` : "";
  return `${context.name} wants the assistant${when} ${negative ? "not to" : "to"} ${rest}`;
}

/** snake_case of a noun phrase: "favourite ice cream" -> favorite_ice_cream, "dog's name" -> dog_name. */
function snakeKey(phrase: string): string | null {
  const key = phrase
    .toLowerCase()
    .replace(/favourite/g, "favorite")
    .replace(/'s\b/g, "")
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, KEY_MAX_CHARS)
    .replace(/_+$/, "");
  return key || null;
}

/** A memory's text as one sentence: capitalised, within the limit, ending in a full stop; none when it would be empty. */
function finished(memory: AnsweredMemory): AnsweredMemory[] {
  let text = memory.text
    .replace(/\s+/g, " ")
    .replace(/[\s,;:.!\u2026-]+$/, "")
    .trim();
  if (text === "") return [];
  if (text.length > MEMORY_TEXT_MAX_CHARS - 1) text = text.slice(0, MEMORY_TEXT_MAX_CHARS - 1).replace(/\s+\S*$/, "");
  return [{ ...memory, text: `${text[0]!.toUpperCase()}${text.slice(1)}.` }];
}
