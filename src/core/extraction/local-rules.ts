import { ModelError } from "../../errors";
import type { JsonAnswer, JsonModel, JsonRequest } from "../../ports";
import { findTimes, type Lean } from "../search/time-expressions";
import {
  type AnsweredMemory,
  KEY_MAX_CHARS,
  MEMORY_TEXT_MAX_CHARS,
  type MemoryKind,
  parsePrompt,
  SUBJECT_MAX_CHARS,
} from "./contract";
import {
  ADV,
  bare,
  chosenTime,
  dayOf,
  eventTense,
  LEAD_IN,
  MACHINE_SPEAKER,
  normalized,
  normalizedText,
  QUESTION_START,
  sentencesOf,
  type Tense,
  type TurnContext,
  thirdPerson,
  VAGUE,
  withoutTimes,
  withResolvedTimes,
  words,
  YOU,
} from "./local-english";

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
    // A real model runs out mid-answer; the stand-in stops after the last whole memory that fits, and says it was cut.
    const all = memories.length;
    while (tokensOf({ memories }) > request.maxTokens) memories.pop();
    const content = { memories };
    return { content, cut: memories.length < all, tokensIn, tokensOut: tokensOf(content), neurons: 0 };
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
