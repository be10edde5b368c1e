/** English function words: left out of keyword queries and local embeddings (they match everything). */
export const STOPWORDS: ReadonlySet<string> = new Set(
  "a an and are as at be but by did do does for from had has have he her his how i if in into is it its me my no not of on or our she so than that the their them then there these they this to was we were what when where which who why will with you your".split(
    " ",
  ),
);
