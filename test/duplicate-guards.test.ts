import { describe, expect, it } from "vitest";
import { comparable, likeness, meaningGuard } from "../src/core/extraction/duplicates";
import { storageKey } from "../src/core/extraction/known-memories";
import { foldName } from "../src/shared/names";

// What near-duplicate matching may merge (docs/extraction.md, "Duplicate guards"), and how names compare.

/** Whether consolidation would take `b` for a repeat of `a` (same subject and kind assumed). */
function repeats(a: string, b: string): boolean {
  const [x, y] = [comparable(a), comparable(b)];
  const alike = likeness(x, y);
  return alike.same || (alike.near && meaningGuard(x, y) === null);
}

describe("near duplicates never merge statements that differ in meaning", () => {
  // Each pair is near by its words (Jaccard at or over NEAR_DUPLICATE): only the guard tells them apart.
  const frame = (x: string) => `Sam walks ${x} every morning before work in the big park near his old home.`;
  const apart: [string, string, RegExp][] = [
    ["Sam likes sushi.", "Sam does not like sushi.", /negation/],
    ["Sam likes sushi.", "Sam doesn't like sushi.", /negation/],
    ["Sam eats meat.", "Sam never eats meat.", /negation/],
    ["Sam lives in Paris.", "Sam no longer lives in Paris.", /negation/],
    ["Sam drinks coffee.", "Sam does not drink coffee anymore.", /negation/],
    ["Sam has no car.", "Sam has a car.", /negation/],
    [frame("two dogs"), frame("three dogs"), /number/],
    [frame("5 km"), frame("10 km"), /number/],
    [frame("his dog since 1990"), frame("his dog since 1991"), /number/],
    [frame("the dog in May"), frame("the dog in June"), /date/],
    [frame("the dog on Monday"), frame("the dog on Friday"), /date/],
    [frame("Anna's dog"), frame("Maria's dog"), /name/],
  ];
  for (const [a, b, why] of apart) {
    it(`"${a}" / "${b}", both ways`, () => {
      expect(likeness(comparable(a), comparable(b)).near).toBe(true);
      expect(repeats(a, b)).toBe(false);
      expect(repeats(b, a)).toBe(false);
      expect(meaningGuard(comparable(a), comparable(b))).toMatch(why);
      expect(meaningGuard(comparable(b), comparable(a))).toMatch(why);
    });
  }

  const same: [string, string][] = [
    ["Caroline moved to Boston.", "Caroline has moved to Boston."],
    ["Melanie's daughter plays the piano.", "Melanie's daughter plays piano."],
    ["Sam does not like sushi.", "Sam doesn't like sushi!"],
    ["Sam adopted two dogs.", "Sam has adopted two dogs."],
    ["Sam no longer lives in Paris.", "Sam does not live in Paris anymore."],
  ];
  for (const [a, b] of same) {
    it(`"${a}" / "${b}" are one memory, both ways`, () => {
      expect(repeats(a, b)).toBe(true);
      expect(repeats(b, a)).toBe(true);
    });
  }
});

describe("names in every script", () => {
  it("keeps people apart whose names differ in any script, and folds case and compatibility forms", () => {
    const people = ["Иван", "Пётр", "王伟", "李娜", "محمد", "فاطمة", "Zoë", "Zoe", "José", "Jose", "Ærin"];
    const keys = people.map((p) => storageKey(p, "home_city"));
    expect(new Set(keys).size).toBe(people.length);
    expect(keys.slice(0, 4)).toEqual(["иван.home_city", "пётр.home_city", "王伟.home_city", "李娜.home_city"]);
    expect(foldName("CAROLINE")).toBe(foldName("caroline"));
    expect(foldName("ИВАН")).toBe(foldName("Иван"));
    // NFKC: a composed and a decomposed ë are one letter; full-width letters are their plain forms.
    expect(foldName("Zoe\u0308")).toBe(foldName("Zo\u00eb"));
    expect(foldName("Ｚｏｅ")).toBe(foldName("Zoe"));
    expect(foldName("Straße")).toBe(foldName("STRASSE"));
  });
});
