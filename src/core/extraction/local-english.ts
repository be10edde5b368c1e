import type { FoundTime } from "../search/time-expressions";
import type { PromptTurn } from "./contract";

// The English of the offline stand-in (local-rules.ts): sentences and clauses, the third person, tenses, and the
// times a sentence names as words that need no "now".

/** A text as duplicates compare: its words, lowercased. */
export const normalizedText = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim();

export interface TurnContext {
  turn: PromptTurn;
  /** How the text names the speaker: their name, or "the user". */
  name: string;
  toAssistant: boolean;
}

export const DAY = 86_400_000;
/** Speakers whose own "I" is no person's memory. */
export const MACHINE_SPEAKER = /^(?:assistant|system|ai|bot|model|tool)$/i;

export const ADVERBS = [
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
export const LY_VERBS = [
  "fly",
  "apply",
  "reply",
  "rely",
  "supply",
  "comply",
  "imply",
  "multiply",
  "ally",
  "bully",
  "rally",
];
/** Adverbs between a subject and its verb, as a regex fragment (each followed by space). */
export const ADV = `(?:(?:${ADVERBS.join("|").replace(/ /g, "\\s+")}|(?!(?:${LY_VERBS.join("|")})\\b)[a-z]{3,}ly)\\s+)*`;

export const isAdverb = (word: string) => {
  const w = word.toLowerCase();
  return ADVERBS.includes(w) || (/^[a-z]{3,}ly$/.test(w) && !LY_VERBS.includes(w));
};

export const IRREGULAR_PAST = new Set(
  (
    "arose awoke was were bore beat became began bent bit bled blew broke brought built burnt bought caught chose " +
    "came cost crept cut dealt dug did drew dreamt drank drove ate fell fed felt fought found fled flew forgot forgave " +
    "froze got gave went grew hung had heard hid hit held hurt kept knew laid led leant learnt left lent let lit lost " +
    "made meant met paid put quit read rode rang rose ran said saw sought sold sent set shook shot showed shut sang " +
    "sank sat slept slid spoke sped spent split spread stood stole stuck struck swore swept swam swung took taught " +
    "tore told thought threw understood woke wore won wrote"
  ).split(" "),
);
export const isPast = (word: string) => {
  const w = word.toLowerCase();
  return IRREGULAR_PAST.has(w) || /^[a-z]{2,}(?:[^e]ed|ied)$/.test(w);
};
/** Words after "I" that take no -s: modals, past forms, words that are no verb. */
export const NOT_CONJUGATED = new Set(
  (
    "can could will would shall should must might may ought gotta gonna wanna used " +
    "to and or but who that which as in on at with for the a an myself alone too was"
  ).split(" "),
);

/** A present-tense verb after "I" in the third person: love -> loves, go -> goes, have -> has. */
export function conjugate(verb: string): string {
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
export const BEFORE_SUBJECT = new Set(
  "when whenever if unless that because before after and but so as while once until".split(" "),
);

/**
 * The sentence in the third person about the speaker, word by word: I -> <name>, I'm -> <name> is, I've -> <name>
 * has, my -> <name>'s, me -> <name>, we -> <name> and others, a present verb after I takes its -s. With `assistant`
 * (instructions), you -> the assistant, your -> its.
 */
export function thirdPerson(text: string, name: string, assistant = false): string {
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
export function normalized(text: string): string {
  return text.replace(/[\u2018\u2019]/g, "'").replace(/\bi(?=['\s,!?;:]|\.(?![a-z])|$)/g, "I");
}

export const words = (text: string) => text.match(/[A-Za-z0-9']+/g) ?? [];

/** Where a full stop does not end a sentence. */
export const ABBREVIATION = /^(?:mr|mrs|ms|dr|st|jr|sr|prof|vs|etc|e\.g|i\.e|approx|[A-HJ-Z])$/i;

/** A turn's sentences, and within one its clauses joined by ", and I" / ", but I" / ", so I" or ";". */
export function sentencesOf(text: string): string[] {
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
export function clausesOf(sentence: string): string[] {
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
export function compoundSubject(before: string[]): boolean {
  const first = before[0] ?? "";
  return (
    before.length > 0 &&
    before.length <= 5 &&
    (/^(?:my|our|me)$/i.test(first) || (/^[A-Z]/.test(first) && !/^I\b/.test(first))) &&
    !before.some((w) => /^(?:is|are|was|were|am|has|have|had)$/i.test(w) || isPast(w))
  );
}

/** Greetings and fillers at a sentence's start ("Hey Mel!", "Oh,", "So", "I think"). */
export const LEAD_IN = new RegExp(
  "^(?:(?:hi|hey|hello|hiya|howdy|thanks|good\\s+(?:morning|afternoon|evening|night))" +
    "(?:\\s+(?:there|all|everyone|guys|[A-Za-z][\\w'-]*))?\\s*[,!.:;-]+\\s*" +
    "|(?:hi|hey|hello|oh|ah|aw+|well|so|yeah|yes|yep|yup|no|nope|ok|okay|wow|ha(?:ha)*|lol|um|uh|hmm|actually|" +
    "honestly|anyway|anyways|also|and|but|plus|btw|by\\s+the\\s+way|guess\\s+what|fun\\s+fact|I\\s+mean|" +
    "I\\s+think(?:\\s+that)?|I\\s+guess|I\\s+believe|to\\s+be\\s+honest|tbh)\\b[\\s,!:;.-]*)+",
  "i",
);
export const QUESTION_START =
  /^(?:(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|had|may|might)\s+(?:I|you|we|they|he|she|it|there|my|your)\b|(?:what|who|whom|whose|which|why|how)\b)/i;
export const YOU = /\b(?:you|your|yours|yourself|yourselves|you're|you've|you'll|you'd|u|ya)\b/i;

// --- times ---

/** Times that name no day to date an event by. */
export const VAGUE = /^(?:recently|lately|the\s+other\s+(?:day|night))$/i;
/** A time of one word that the grammar reads alone ("Sunday" in "Sunday brunch"): not the sentence's date if another is named. */
export const bare = (t: FoundTime) =>
  /^[A-Za-z]+\.?$/.test(t.text) && !/^(?:yesterday|today|tonight|tomorrow)$/i.test(t.text);
/** The time that dates a sentence: its first, unless that is a bare one and another is named. */
export const chosenTime = (times: FoundTime[]) => times.find((t) => !bare(t)) ?? times[0] ?? null;
/** "two weeks ago", "in three days": a range centred on the day it names. */
export const centred = (t: FoundTime) =>
  /\b(?:ago|back|before\s+(?:now|today))$|^in\s+\S+(?:\s+\S+)?\s+(?:day|week|month|year)s?\b/i.test(t.text);
export const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);
export const startOfDay = (at: number) => Math.floor(at / DAY) * DAY;
export const MONTHS = "January February March April May June July August September October November December".split(
  " ",
);

/** The day a time means for `when`: where its range starts, or the day a centred one is centred on. */
export function dayOf(t: FoundTime): string {
  return isoDay(centred(t) ? startOfDay((t.from + t.to) / 2) : t.from);
}

/** A time as words that need no "now": "on 2023-05-07", "in the week of 2023-05-01", "in May 2023". */
export function labelOf(t: FoundTime): string {
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
export function withoutTimes(text: string, times: FoundTime[]): string {
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
export function withResolvedTimes(text: string, times: FoundTime[]): string {
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

export function tidy(text: string): string {
  return text
    .replace(/\s+([,.;:!?])/g, "$1")
    .replace(/,+(?=\s*(?:[,.;:!?]|$))/g, "")
    .replace(/^[\s,;:-]+/, "")
    .replace(/\s{2,}/g, " ")
    .trim();
}

// --- events ---

export type Tense = "past" | "future" | "progressive" | "present" | "be" | "other";

/** The tense of a first-person sentence (I, we, "my X and I", "my X ..."); null when it has no such subject. */
export function tenseOf(clause: string): { tense: Tense; possessive: boolean } | null {
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
export function beTense(w: string[], i: number): Tense {
  while (i < w.length && isAdverb(w[i]!)) i++;
  const next = w[i] ?? "";
  if (next === "going" || next === "gonna" || next === "about") return "future";
  return /^[a-z]{2,}ing$/.test(next) ? "progressive" : "be";
}

/** A sentence with a time states an event when it is past or future, or present about today or later: its tense. */
export function eventTense(clause: string, time: FoundTime, said: number): Tense | null {
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
