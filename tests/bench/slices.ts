/**
 * How even the team slices are (issue 39: largest slice / mean slice ≤ 1.5 for a realistic name list). Prints
 * figures; asserts nothing. Run: `npm run bench -- slices` (BENCH_SLICE_TEAMS, default 1000,5000).
 *
 * Today's slices cut by the name's first letter (ADR 0022, SLICE_LETTERS); ADR 0034 proposes cutting by the leading
 * hex digits of the shard the team's Flux files already use (teamShard: SHA-256 of the name), K = 16 to 256.
 * Both are computed here for the same names, from the product's own functions. The names are drawn, with a fixed
 * seed, from the shapes team names take in engineering organisations (a domain word, often a second one or a
 * suffix: `payments`, `payments-api`, `search-ranking`, `data-platform-ops`), and, for contrast, the names
 * `npm run bench -- flux` seeds (`a00000`, `b00001`, ...: every letter in turn, as even as letter slices can be).
 */
import { HASH_SLICE_COUNTS, SLICE_LETTERS, sliceHolding, validateTeam } from "@berth/core";
import { loadConfig } from "@berth/config";
import { join } from "node:path";
import { REPO_ROOT } from "../support/berth.js";
import { load, OWNER } from "./fleet-seed.js";

const SIZES = (process.env.BENCH_SLICE_TEAMS ?? "1000,5000").split(",").map(Number);

/** Words team names are made of, by how often they lead one (a domain, a product area, a platform function). */
const DOMAINS = [
  ...["payments", "platform", "pricing", "partners", "procurement", "profile", "promotions", "portal", "printing"],
  ...["search", "security", "shipping", "storage", "support", "sales", "settlement", "subscriptions", "streaming"],
  ...["checkout", "catalog", "claims", "compliance", "content", "core", "customer", "cloud", "comms"],
  ...["data", "delivery", "devex", "discovery", "docs", "billing", "booking", "identity", "inventory", "insights"],
  ...["ledger", "logistics", "loyalty", "marketing", "media", "mobile", "orders", "onboarding", "observability"],
  ...["risk", "reporting", "returns", "recommendations", "fraud", "finance", "fulfilment", "growth", "hr", "web"],
  ...["analytics", "auth", "api", "ads", "experimentation", "email", "notifications", "tax", "treasury", "travel"],
];
const SECONDS = ["api", "web", "core", "ops", "platform", "data", "ml", "infra", "backend", "frontend", "mobile"];
const THIRDS = ["eu", "us", "apac", "v2", "internal", "partner", "batch", "stream"];

/** A deterministic generator (mulberry32): the same names on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` distinct names of realistic shapes, each valid as a team name on this platform (others are drawn again). */
function realisticNames(n: number, valid: (name: string) => boolean): string[] {
  const next = random(39);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const names = new Set<string>();
  while (names.size < n) {
    const parts = [pick(DOMAINS)];
    const shape = next();
    if (shape > 0.15) parts.push(next() < 0.5 ? pick(DOMAINS) : pick(SECONDS));
    if (shape > 0.7) parts.push(pick(SECONDS));
    if (shape > 0.9) parts.push(pick(THIRDS));
    let name = [...new Set(parts)].join("-").slice(0, 40);
    // Large organisations number their teams when a shape repeats (`payments-api-2`).
    for (let i = 2; names.has(name); i++) name = `${[...new Set(parts)].join("-").slice(0, 36)}-${i}`;
    if (valid(name)) names.add(name);
  }
  return [...names];
}

/** The names tests/bench/flux.ts seeds (its `teamNames`). */
const fluxBenchNames = (n: number) =>
  Array.from({ length: n }, (_, i) => `${"abcdefghijklmnopqrstuvwxyz"[i % 26]}${String(i).padStart(5, "0")}`);

/** Largest / mean over `slices` slices (empty ones count in the mean), and how many are empty. */
function balance(names: string[], sliceOf: (name: string) => string, slices: number) {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(sliceOf(name), (counts.get(sliceOf(name)) ?? 0) + 1);
  const largest = Math.max(...counts.values());
  return { ratio: largest / (names.length / slices), largest, empty: slices - counts.size };
}

const config = loadConfig(
  {
    BERTH_CONFIG_FILE: join(REPO_ROOT, "infra", "local", "berth.yaml"),
    BERTH_GIT_URL: "file:///unused",
    BERTH_GIT_WORKDIR: "/tmp/unused",
    BERTH_AUTH_MODE: "dev",
    BERTH_DEV_TOKEN: "unused-dev-token-0123456789",
  },
  REPO_ROOT,
);
/** Valid as a team on the platform: some words alone are names it reserves. */
const valid = (name: string) => {
  try {
    validateTeam({ name, owners: [OWNER], environments: ["dev"] }, config.platform);
    return true;
  } catch {
    return false;
  }
};

/** Every hash count the platform config takes (HASH_SLICE_COUNTS), cut by the product's own sliceHolding. */
const layouts: Array<{ label: string; slices: number; sliceOf: (name: string) => string }> = [
  { label: `letters (ADR 0022, ${SLICE_LETTERS.length})`, slices: SLICE_LETTERS.length, sliceOf: (n) => n[0]! },
  ...HASH_SLICE_COUNTS.map((count) => ({
    label: `hash, K = ${count}${count === 16 ? " (ADR 0034)" : ""}`,
    slices: count,
    sliceOf: (n: string) => sliceHolding({ by: "hash", count }, n).id,
  })),
];

const startLoad = load();
console.log(`slice balance (largest slice / mean slice; goal ≤ 1.5), load ${startLoad}`);
console.log("| names | layout | largest / mean | largest | empty slices |");
console.log("|---|---|---|---|---|");
for (const size of SIZES) {
  const sets = [
    { label: `${size} realistic`, names: realisticNames(size, valid) },
    { label: `${size} as the Flux benchmark's`, names: fluxBenchNames(size) },
  ];
  for (const { label, names } of sets)
    for (const layout of layouts) {
      const { ratio, largest, empty } = balance(names, layout.sliceOf, layout.slices);
      console.log(`| ${label} | ${layout.label} | ${ratio.toFixed(2)} | ${largest} | ${empty} |`);
    }
}
const realistic = realisticNames(Math.max(...SIZES), valid);
const byLetter = new Map<string, number>();
for (const n of realistic) byLetter.set(n[0]!, (byLetter.get(n[0]!) ?? 0) + 1);
console.log(
  `first letters of the ${realistic.length} realistic names: ${[...byLetter]
    .sort((a, b) => b[1] - a[1])
    .map(([l, c]) => `${l} ${c}`)
    .join(", ")}`,
);
console.log(`load ${startLoad} → ${load()}`);
