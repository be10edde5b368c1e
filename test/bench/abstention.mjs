// Abstention: queries that nothing stored answers should get nothing back. Two sets over a loaded corpus:
// - 120 queries of 1-3 words absent from the corpus (no corpus word shares their first letters, so no
//   stem or inflection of theirs occurs), asked of every search tool;
// - 60 natural-language questions on topics a personal chat never touches (physics, programming,
//   medicine...); they still share everyday words ("work", "sound") with the chats.
// Reported: the share of queries that get no result at all, per tool.
import { fmt, pct, percentile } from "./metrics.mjs";

const CANDIDATE_WORDS = [
  "zebra",
  "chromodynamics",
  "quark",
  "xylophonist",
  "thermocline",
  "ptolemaic",
  "isotopologue",
  "glockenspiel",
  "perihelion",
  "vexillology",
  "sphygmomanometer",
  "obsidianite",
  "crwth",
  "zyzzyva",
  "quasar",
  "bioluminescent",
  "fjordland",
  "cryptobiotic",
  "neutrino",
  "lanthanide",
  "hyperparameter",
  "kubectl",
  "nginx",
  "postgresql",
  "monad",
  "eigenvector",
  "tokamak",
  "gluon",
  "pterodactyl",
  "axolotl",
  "brachiosaurus",
  "mitochondrion",
  "dodecahedron",
  "antediluvian",
  "sesquipedalian",
  "zugzwang",
  "quokka",
  "narwhal",
  "basalt",
  "tungsten",
  "ytterbium",
  "xenon",
  "photolithography",
  "derailleur",
  "carburetor",
  "sulfuric",
  "westphalia",
  "schrodinger",
  "byzantine",
  "fourier",
  "haskell",
  "webassembly",
  "blorptastic",
  "frumious",
  "snarkle",
  "quibblefex",
  "vorpal",
  "mimsy",
  "borogove",
  "jubjub",
  "tumtum",
  "zorblax",
  "klendathu",
  "florbit",
  "wuzzle",
  "gribnak",
  "ferrofluid",
  "magnetar",
  "heliopause",
  "spectrometer",
  "anticline",
  "cyclotron",
  "permafrost",
  "isobar",
];

export const OFF_TOPIC_QUESTIONS = [
  "How do I configure TLS certificates for an nginx reverse proxy?",
  "What is the derivative of the natural logarithm?",
  "Explain the difference between TCP and UDP.",
  "What is the boiling point of mercury in kelvin?",
  "How does a Kubernetes ingress controller route traffic?",
  "What are the side effects of ibuprofen?",
  "Who won the 1998 FIFA World Cup final?",
  "How do I rebase a git branch onto main?",
  "What is the airspeed velocity of an unladen swallow?",
  "Explain quantum entanglement in simple terms.",
  "What is the capital of Mongolia?",
  "How many moons does Jupiter have?",
  "What is the time complexity of quicksort?",
  "How do I compute eigenvalues of a matrix?",
  "What causes inflation in a fiat currency economy?",
  "How are mortgage interest rates calculated?",
  "Describe the Krebs cycle in cellular respiration.",
  "What does a PostgreSQL vacuum do?",
  "How do I replace a bicycle derailleur cable?",
  "What is the half-life of carbon-14?",
  "Which enzyme breaks down lactose?",
  "How do transistors amplify current?",
  "What is the Pythagorean theorem used for?",
  "How do I declare a generic interface in TypeScript?",
  "What is the atomic number of tungsten?",
  "Explain the CAP theorem for distributed databases.",
  "What are the rules of cricket's leg before wicket?",
  "How is sulfuric acid manufactured industrially?",
  "What does the Federal Reserve's discount rate control?",
  "How do I set up a Python virtual environment?",
  "What is the Schrodinger equation?",
  "Why do tectonic plates cause earthquakes?",
  "What is the melting point of titanium alloy?",
  "How do vaccines trigger antibody production?",
  "Explain gradient descent in neural network training.",
  "What is the GDP of Luxembourg?",
  "How do I fix a segmentation fault in C?",
  "What is a Fourier transform?",
  "Which planet has the longest orbital period?",
  "How do I calculate compound interest on a bond?",
  "What is the function of mitochondria?",
  "How does public key cryptography work?",
  "What is the treaty of Westphalia?",
  "How do I tune a carburetor on a motorcycle?",
  "What are the symptoms of vitamin B12 deficiency?",
  "Explain the Byzantine generals problem.",
  "How are integrated circuits fabricated with photolithography?",
  "What is the speed of sound in seawater?",
  "How do I write a SQL left outer join?",
  "What is a Turing machine?",
  "How does a heat pump compressor work?",
  "What is the Higgs boson?",
  "How do I configure DNS records for email with SPF and DKIM?",
  "What is a monad in Haskell?",
  "What are the tax implications of capital gains on cryptocurrency?",
  "How does the immune system respond to bacterial sepsis?",
  "What is the chemical formula of ammonia?",
  "How do I compile a Rust crate for WebAssembly?",
  "Explain the Doppler effect.",
  "What are Maxwell's equations?",
];

/** Candidate words no corpus word starts like (first max(4, length - 2) letters), so no form of them is stored. */
export function absentWords(corpusTexts) {
  const words = new Set(corpusTexts.flatMap((t) => t.toLowerCase().match(/\p{L}+/gu) ?? []));
  const prefixes = new Set();
  for (const w of words) for (let n = 4; n <= w.length; n++) prefixes.add(w.slice(0, n));
  return CANDIDATE_WORDS.filter((w) => !prefixes.has(w.slice(0, Math.max(4, w.length - 2))));
}

/** 120 queries of 1-3 absent words, deterministic. */
export function absentWordQueries(words) {
  return Array.from({ length: 120 }, (_, i) => {
    const n = 1 + (i % 3);
    return Array.from({ length: n }, (_, j) => words[(i * 7 + j * 13) % words.length]).join(" ");
  });
}

/**
 * Runs both sets against a loaded tenant. `projects` are the namespaces to ask in (one per query, in
 * turn); `docType` the type of the stored items (retrieve_by_type). Returns the lines, and `hybrid`: the
 * share of both sets that hybrid search answers with nothing.
 */
export async function measureAbstention(tenant, projects, corpusTexts, docType) {
  const words = absentWords(corpusTexts);
  const absent = absentWordQueries(words);
  const asks = (query, i) => {
    const project = projects[i % projects.length];
    return {
      "search (hybrid)": ["search", { query, project, limit: 10 }],
      "search (keyword)": ["search", { query, project, limit: 10, mode: "keyword" }],
      "search (vector)": ["search", { query, project, limit: 10, mode: "vector" }],
      get_similar_contexts: ["get_similar_contexts", { query, limit: 5 }],
      retrieve_by_type: ["retrieve_by_type", { query, doc_type: docType, project_id: project }],
      query_graph: ["query_graph", { query }],
      "memory_context_build (min_similarity 0)": [
        "memory_context_build",
        { query, token_budget: 2000, namespace: project, min_similarity: 0, use_cache: false },
      ],
      "memory_context_build (default 0.5)": [
        "memory_context_build",
        { query, token_budget: 2000, namespace: project, use_cache: false },
      ],
    };
  };
  const empty = (name, result) =>
    name.startsWith("search")
      ? result.results.length === 0
      : name === "get_similar_contexts"
        ? result.length === 0
        : name.startsWith("memory_context_build")
          ? result.memory_count === 0
          : result.results.length === 0;
  const lines = [`  abstention: share of unrelated queries answered with nothing (%)`];
  lines.push(
    `    ${"tool".padEnd(42)} ${`${absent.length} absent-word`.padStart(16)} ${`${OFF_TOPIC_QUESTIONS.length} off-topic`.padStart(14)}`,
  );
  const tools = Object.keys(asks("x", 0));
  const shares = {};
  for (const [set, queries] of [
    ["absent", absent],
    ["offTopic", OFF_TOPIC_QUESTIONS],
  ]) {
    for (const tool of tools) {
      const results = await tenant.callMany(queries.map((q, i) => asks(q, i)[tool]));
      (shares[tool] ??= {})[set] = results.filter((r) => empty(tool, r)).length / queries.length;
    }
  }
  for (const tool of tools)
    lines.push(
      `    ${tool.padEnd(42)} ${pct(shares[tool].absent).padStart(16)} ${pct(shares[tool].offTopic).padStart(14)}`,
    );
  const all = absent.length + OFF_TOPIC_QUESTIONS.length;
  const hybrid = shares["search (hybrid)"];
  const hybridShare = (hybrid.absent * absent.length + hybrid.offTopic * OFF_TOPIC_QUESTIONS.length) / all;
  lines.push(
    `    search (hybrid), both sets together: ${pct(hybridShare)}% of ${all} (absent words drawn from ${words.length} candidates)`,
  );
  const ping = [];
  const search = [];
  for (let i = 0; i < 40; i++) {
    ping.push((await tenant.call("ping", {})).ms);
    search.push(
      (
        await tenant.call("search", {
          query: OFF_TOPIC_QUESTIONS[i % OFF_TOPIC_QUESTIONS.length],
          project: projects[i % projects.length],
          limit: 10,
        })
      ).ms,
    );
  }
  lines.push(
    `    latency, interleaved: ping p50 ${fmt(percentile(ping, 50))} ms; search (off-topic question) p50 ${fmt(percentile(search, 50))} ms`,
  );
  return { lines, hybrid: hybridShare };
}
