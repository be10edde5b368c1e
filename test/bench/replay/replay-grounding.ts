// `npm run replay -- grounding`: how extraction's source check (src/core/extraction/grounding.ts) treats LoCoMo's
// observations, each cited once as its authors cite it and once one turn off (the turn before it, or after the
// window's first), in windows of 20 turns of its session. No D1 and no server: the check is pure, so this runs in
// seconds. Prints how many right citations it moves (the harm) and how many off-by-one ones it puts right.
// Reads ../shared/data (benchmarks may; tests never do).
import { groundedSources } from "../../../src/core/extraction/grounding";
import { partOf, type Turn, type Window } from "../../../src/core/extraction/windows";
import type { LocomoSample } from "../extraction.mjs";

const WINDOW_TURNS = 20;

export function replayGrounding(samples: LocomoSample[]): string[] {
  const figures = { right: 0, rightMoved: 0, off: 0, offRight: 0, offElsewhere: 0, offKept: 0 };
  for (const sample of samples) {
    const c = sample.conversation as Record<string, unknown>;
    for (let n = 1; Array.isArray(c[`session_${n}`]); n++) {
      const said = c[`session_${n}`] as { speaker: string; dia_id: string; text: string }[];
      const turns: Turn[] = said.map((t, i) => ({
        id: t.dia_id,
        position: i,
        speaker: t.speaker,
        role: null,
        content: t.text,
        tokens: 0,
        createdAt: i,
      }));
      const observed = (sample as { observation?: Record<string, Record<string, [string, unknown][]>> }).observation?.[
        `session_${n}_observation`
      ];
      for (const [subject, list] of Object.entries(observed ?? {}))
        for (const [text, cited] of list) {
          const dias = (Array.isArray(cited) ? cited : [cited])
            .flatMap((d) => String(d).split(/[,;\s]+/))
            .filter(Boolean);
          const at = dias.length === 1 ? turns.findIndex((t) => t.id === dias[0]) : -1;
          if (at < 0) continue;
          const start = at - (at % WINDOW_TURNS);
          const window: Window = { id: "replay", ...partOf(turns.slice(start, start + WINDOW_TURNS), [], 0) };
          const right = turns[at]!;
          const check = (source: Turn) => groundedSources({ subject, text }, [source], window).sources[0];
          figures.right++;
          if (check(right) !== right) figures.rightMoved++;
          const neighbour = window.turns[at > start ? at - start - 1 : 1];
          if (neighbour === undefined) continue;
          figures.off++;
          const read = check(neighbour);
          if (read === right) figures.offRight++;
          else if (read !== neighbour) figures.offElsewhere++;
          else figures.offKept++;
        }
    }
  }
  const of = (part: number, whole: number) => `${part} of ${whole} (${((100 * part) / whole).toFixed(1)} %)`;
  return [
    `Source check on LoCoMo's single-turn observations, windows of ${WINDOW_TURNS} turns:`,
    `  cited right: moved ${of(figures.rightMoved, figures.right)}`,
    `  cited one turn off: put right ${of(figures.offRight, figures.off)}, moved elsewhere ${figures.offElsewhere}, kept as cited ${figures.offKept}`,
  ];
}
