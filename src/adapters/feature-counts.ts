/**
 * Occurrences of hashed features, for the local embedder: an open-addressing table keyed by the
 * feature's 32-bit FNV-1a hash, reused from text to text. A Map keyed by feature strings would make V8
 * intern every new string, a large share of the embedder's time. Two features of one text with the same hash
 * count as one; at 500 features a text that happens about once in 30,000 texts, and moves one bucket slightly.
 */
export class FeatureCounts {
  private hashes = new Int32Array(0);
  private counts = new Int32Array(0);
  private weights = new Float64Array(0);
  /** Slots in the order their features first came, so a text's features are visited as they came. */
  private order = new Int32Array(0);
  private mask = 0;
  private size = 0;

  /** Empties the table, with room for at least `features` features. */
  reset(features: number): void {
    let capacity = 256;
    while (capacity < features * 2) capacity *= 2;
    if (capacity > this.hashes.length) {
      this.hashes = new Int32Array(capacity);
      this.counts = new Int32Array(capacity);
      this.weights = new Float64Array(capacity);
      this.order = new Int32Array(capacity);
    } else {
      for (let i = 0; i < this.size; i++) this.counts[this.order[i]!] = 0;
    }
    this.mask = this.hashes.length - 1;
    this.size = 0;
  }

  /** Counts one occurrence of the feature with this hash; its weight is the one it first came with. */
  add(hash: number, weight: number): void {
    let slot = (Math.imul(hash, 0x9e3779b1) >>> 0) & this.mask;
    for (;;) {
      if (this.counts[slot] === 0) {
        this.hashes[slot] = hash;
        this.counts[slot] = 1;
        this.weights[slot] = weight;
        this.order[this.size++] = slot;
        return;
      }
      if (this.hashes[slot] === hash) {
        this.counts[slot]!++;
        return;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  /** Calls `visit(hash, occurrences, weight)` for each feature, in the order they first came. */
  forEach(visit: (hash: number, occurrences: number, weight: number) => void): void {
    for (let i = 0; i < this.size; i++) {
      const slot = this.order[i]!;
      visit(this.hashes[slot]! >>> 0, this.counts[slot]!, this.weights[slot]!);
    }
  }
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over one more UTF-16 unit. */
export function fnvStep(hash: number, unit: number): number {
  return Math.imul(hash ^ unit, FNV_PRIME);
}

/** FNV-1a over the UTF-16 units of `text`, continued from `hash` (from the start: fnvText(text)). */
export function fnvText(text: string, hash = FNV_OFFSET): number {
  for (let i = 0; i < text.length; i++) hash = fnvStep(hash, text.charCodeAt(i));
  return hash;
}
