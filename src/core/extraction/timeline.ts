// A key's timeline: of the memories of one key, the current one is the latest in time, whatever order they arrived
// in. Each earlier one is history, valid until the next one's valid_from and superseded by it.

/** One memory of a key as the timeline orders it (`id` may stand for a memory not yet written). */
export interface KeyedMemory {
  id: string;
  /** When it became true (its `when`, else its first source turn's time; an item stored as given: its write). */
  validFrom: number;
  /** Its latest source turn's time: a tie in validFrom goes to the later-said value. */
  saidAt: number;
  /** Order of arrival, the last tie-break (a later write wins). */
  arrival: number;
  tier: string;
  validTo: number | null;
  supersededBy: string | null;
}

/** What one memory of the timeline becomes. */
export interface TimelinePlace {
  id: string;
  tier: string;
  validTo: number | null;
  supersededBy: string | null;
}

const DAY_MS = 86_400_000;

/**
 * A key's memories in time order: the day of valid_from, then the latest source turn, then arrival. By the day, not
 * the instant: a value dated by its `when` ("I moved to Porto last week": that week's Monday, 00:00) and one known
 * only from when it was said ("I live in Lisbon", that Monday at 9:00) tie on their day, and the later said wins.
 */
export function inTimeOrder<T extends KeyedMemory>(memories: readonly T[]): T[] {
  const day = (m: KeyedMemory) => Math.floor(m.validFrom / DAY_MS);
  return [...memories].sort((a, b) => day(a) - day(b) || a.saidAt - b.saidAt || a.arrival - b.arrival);
}

/**
 * Every memory's place on its key's timeline: all but the latest are superseded, each valid until (and superseded
 * by) the next; the latest holds (valid_to null), keeping its tier if it is stashed. valid_to >= valid_from always:
 * the next one's valid_from, or the memory's own where the next one starts earlier on the same day.
 */
export function timeline(memories: readonly KeyedMemory[]): TimelinePlace[] {
  const ordered = inTimeOrder(memories);
  return ordered.map((memory, i) => {
    const next = ordered[i + 1];
    if (next === undefined)
      return {
        id: memory.id,
        tier: memory.tier === "superseded" ? "active" : memory.tier,
        validTo: null,
        supersededBy: null,
      };
    return {
      id: memory.id,
      tier: "superseded",
      validTo: Math.max(next.validFrom, memory.validFrom),
      supersededBy: next.id,
    };
  });
}

/** Whether a memory's place differs from what it holds now (so it is written). */
export function moved(memory: KeyedMemory, place: TimelinePlace): boolean {
  return memory.tier !== place.tier || memory.validTo !== place.validTo || memory.supersededBy !== place.supersededBy;
}
