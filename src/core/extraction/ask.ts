import { ModelError } from "../../errors";
import type { JsonModel } from "../../ports";
import { AnswerError, type ReadAnswer, readAnswer } from "./answer";
import { ANSWER_SCHEMA, ANSWER_SCHEMA_NAME, extractionPrompt, type KnownSubject, SYSTEM_PROMPT } from "./contract";
import { partOf, promptTurns, type Turn, type Window } from "./windows";

/** What asking the model for one window gave and cost. */
export interface Asked {
  /** The memories the answers gave, with what was dropped; null when the window failed. */
  answer: ReadAnswer | null;
  /** Why the window failed (the answers' errors, or the endpoint's own message); null when it did not. */
  error: string | null;
  calls: number;
  tokensIn: number;
  tokensOut: number;
  neurons: number;
  latencyMs: number;
  /** Parts the window was asked in after answers were cut (1: asked whole). */
  parts: number;
}

type Part = Omit<Window, "id">;

/** The window failed: its error is recorded and it is tried again later (retry-windows.ts). */
class PartFailed extends Error {}

/**
 * The model's memories for a window. An answer cut for length (or a prompt too long for the model) is not asked
 * again as it was: the window is asked in two halves, down to a single turn, whose cut answer keeps the memories
 * that came whole. An answer that is not JSON or has no `memories` is asked again once, with its error; a second
 * such answer, or an endpoint that refuses the request (a 4xx other than 429), fails the window. Capacity and
 * spent allocations are thrown, for the queue to retry or the job to wait. `system`: the contract's prompt for
 * conversations, or for a document's passages.
 */
export async function askWindow(
  model: JsonModel,
  window: Window,
  overlap: number,
  maxTokens: number,
  known: readonly KnownSubject[],
  system: string = SYSTEM_PROMPT,
): Promise<Asked> {
  const asked: Asked = {
    answer: null,
    error: null,
    calls: 0,
    tokensIn: 0,
    tokensOut: 0,
    neurons: 0,
    latencyMs: 0,
    parts: 0,
  };
  const ask = async (part: Part): Promise<ReadAnswer> => {
    const prompt = (() => {
      const { context, turns } = promptTurns(part);
      return extractionPrompt(context, turns, known);
    })();
    let retryNote = "";
    let firstError: string | null = null;
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      asked.calls++;
      try {
        const answer = await model.generate({
          system,
          prompt: prompt + retryNote,
          schema: ANSWER_SCHEMA,
          schemaName: ANSWER_SCHEMA_NAME,
          maxTokens,
        });
        asked.tokensIn += answer.tokensIn;
        asked.tokensOut += answer.tokensOut;
        asked.neurons += answer.neurons;
        if (answer.cut || endsEarly(answer.content)) {
          if (part.turns.length > 1) return await inHalves(part);
          asked.parts++;
          return readAnswer(answer.content, part as Window, true);
        }
        const read = readAnswer(answer.content, part as Window);
        asked.parts++;
        return read;
      } catch (error) {
        if (error instanceof ModelError && error.kind === "context") {
          if (part.turns.length > 1) return await inHalves(part);
          throw new PartFailed(`a single turn is longer than the model takes: ${error.message}`.slice(0, 500));
        }
        if (error instanceof ModelError && error.kind === "failed") throw new PartFailed(error.message.slice(0, 500));
        const broken = error instanceof AnswerError || (error instanceof ModelError && error.kind === "output");
        if (!broken) throw error;
        const message = (error as Error).message;
        if (attempt >= 2) throw new PartFailed(`answer 1: ${firstError}; answer 2: ${message}`.slice(0, 1_000));
        firstError = message.slice(0, 400);
        retryNote = `\n\nYour previous answer was refused: ${message} Answer again with JSON only, matching the schema.`;
      } finally {
        asked.latencyMs += Date.now() - started;
      }
    }
  };
  const inHalves = async (part: Part): Promise<ReadAnswer> => {
    const middle = Math.ceil(part.turns.length / 2);
    const first = part.turns.slice(0, middle);
    const second = part.turns.slice(middle);
    const a = await ask(partOf(first, part.context, overlap));
    const b = await ask(partOf(second, [...part.context, ...first] as Turn[], overlap));
    return { memories: [...a.memories, ...b.memories], dropped: [...a.dropped, ...b.dropped] };
  };
  try {
    asked.answer = await ask(window);
  } catch (error) {
    if (!(error instanceof PartFailed)) throw error;
    asked.error = error.message;
  }
  return asked;
}

/** An answer whose JSON (after any prose or fence before it) stops before it closes: cut, though the endpoint did not say so. */
function endsEarly(content: unknown): boolean {
  if (typeof content !== "string") return false;
  const first = content.indexOf("{");
  if (first < 0) return false;
  const bare = content.slice(first).trim();
  try {
    JSON.parse(bare);
    return false;
  } catch (error) {
    return /Unexpected end of JSON input|Unterminated string/i.test((error as Error).message);
  }
}
