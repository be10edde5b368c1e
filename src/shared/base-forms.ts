/**
 * English irregular inflections the Porter stemmer cannot join to their base form ("bought" stays "bought",
 * "went" stays "went"): each maps to the base form, so a question asking what someone "bought" finds the turn
 * where they "buy", and "went" the turn where they "go". Index text, forward indexes, feedback words and queries
 * all pass through this one map, as the Krovetz stemmer's dictionary does before its rules. Forms that are
 * also common words of another meaning ("found", "left", "saw", "lay", "ground", "shot", "thought", "bit") are
 * left out, as are forms of be, have and do (their base forms are stopwords).
 */

/**
 * The keyword tokenization chunks are indexed with (chunks.keyword_version): a chunk with an older one (NULL: before
 * irregular forms were joined) is rewritten by the re-index sweep (keyword-index/indexing.ts). Raise it when a change to the
 * tokens would make stored keyword rows disagree with the queries.
 */
export const KEYWORD_VERSION = 1;

const GROUPS = `arise arose arisen|awake awoke awoken|begin began begun|bend bent|bleed bled|blow blew blown|break broke broken|breed bred
|bring brought|build built|buy bought|catch caught|choose chose chosen|cling clung|come came|creep crept|deal dealt|dig dug
|draw drew drawn|dream dreamt|drink drank drunk|drive drove driven|eat ate eaten|fall fell fallen|feed fed|feel felt
|fight fought|flee fled|fly flew flown|forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven
|freeze froze frozen|get got gotten|give gave given|go went gone|grow grew grown|hang hung|hear heard|hide hid hidden
|hold held|keep kept|kneel knelt|know knew known|lead led|leap leapt|lend lent|lose lost|make made|mean meant|meet met
|pay paid|ride rode ridden|ring rang rung|run ran|say said|see seen|seek sought|sell sold|send sent|shake shook shaken
|shine shone|show shown|shrink shrank shrunk|sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid|speak spoke spoken
|speed sped|spend spent|spin spun|stand stood|steal stole stolen|stick stuck|sting stung|strike struck|swear swore sworn
|sweep swept|swim swam swum|swing swung|take took taken|teach taught|tear tore torn|tell told|throw threw thrown
|understand understood|wake woke woken|wear wore worn|weep wept|win won|write wrote written
|child children|man men|woman women|mouse mice|foot feet|tooth teeth|goose geese`;

const BASE: ReadonlyMap<string, string> = new Map(
  GROUPS.split("|").flatMap((group) => {
    const [base, ...forms] = group.trim().split(/\s+/);
    return forms.map((form) => [form, base!] as [string, string]);
  }),
);

/** The token's base form when it is an irregular inflection (lower case), else the token unchanged. */
export function baseForm(token: string): string {
  return BASE.get(token.toLowerCase()) ?? token;
}
