/**
 * The Azure side of an onboarding (issue 39, point 4; ADR 0035): POST → team Ready with the real Azure Service Operator,
 * while the fake Azure holds each federated-credential write for 2 s and answers a concurrent one on the same
 * identity 409, as Azure does. Prints figures; asserts nothing. Run (after `npm test` has built the cluster's
 * components, ASO included):
 *
 *   npm run bench -- azure
 *   BENCH_AZURE_SAMPLES=9 BENCH_AZURE_VERSIONS=v5,v6 npm run bench -- azure
 *
 * One platform as tests/flux/aso.test.ts builds it: real Flux 2.9 and ASO v2.20 on a real apiserver, Berth's API and
 * controller, the fake Azure over HTTPS. For each template version, BENCH_AZURE_SAMPLES teams one after another (each
 * a new identity with two credentials: ASO's and the team's `workload`), after one warm-up team: the time from the POST
 * to Ready in the team's status (GET /v1/teams/{name}/status, as `berth status --watch` polls it), Azure's 409s, and
 * the timeline of ASO's writes to the identity and its credentials for the median team. v5 wakes only the second
 * credential; v6's first credential reads a ConfigMap too, so the controller wakes both.
 */
import { cpus, totalmem } from "node:os";
import { performance } from "node:perf_hooks";
import { statusResponse } from "@berth/api-contract";
import { identityWrites } from "../support/aso.js";
import { startFluxPlatform } from "../support/flux-platform.js";
import { eventually } from "../support/wait.js";
import { load, ms, OWNER } from "./fleet-seed.js";
import { percentile } from "./stats.js";

const SAMPLES = Number(process.env.BENCH_AZURE_SAMPLES ?? 5);
const VERSIONS = (process.env.BENCH_AZURE_VERSIONS ?? "v5,v6").split(",").map((v) => v.trim());
const FIC_WRITE_WINDOW_MS = 2_000;

interface Sample {
  team: string;
  readyMs: number;
  conflicts: number;
  timeline: string[];
}

async function main() {
  const loadBefore = load();
  const platform = await startFluxPlatform({ aso: "real" });
  const azure = platform.azure!;
  azure.arm.opts.ficWriteLatencyMs = FIC_WRITE_WINDOW_MS;
  try {
    const ready = async (name: string) => {
      const res = await platform.request("GET", `/v1/teams/${name}/status`);
      return res.statusCode === 200 && statusResponse.parse(res.json).ready;
    };
    const onboard = async (name: string, templateVersion: string): Promise<Sample> => {
      const posted = performance.now();
      const since = Date.now();
      const res = await platform.request("POST", "/v1/teams", {
        name,
        owners: [OWNER],
        environments: ["dev"],
        roleAssignments: [{ role: "rg-contributor" }],
        templateVersion,
      });
      if (res.statusCode !== 201) throw new Error(`${name}: HTTP ${res.statusCode} ${res.body}`);
      await eventually(`${name} Ready`, () => ready(name), 300_000);
      const readyMs = performance.now() - posted;
      const timeline = identityWrites(azure, name, since);
      return { team: name, readyMs, conflicts: timeline.filter((w) => w.endsWith(" 409")).length, timeline };
    };

    const rows: string[] = [];
    const timelines: string[] = [];
    for (const version of VERSIONS) {
      await onboard(`warm-${version}`, version);
      const samples: Sample[] = [];
      for (let i = 0; i < SAMPLES; i++) samples.push(await onboard(`bench-${version}-${i}`, version));
      const readyMs = samples.map((s) => s.readyMs);
      const p50 = percentile(readyMs, 50);
      const median = samples.find((s) => s.readyMs === p50)!;
      rows.push(
        `| ${version} | ${ms(p50)} | ${ms(percentile(readyMs, 99))} | ${ms(Math.min(...readyMs))} | ${ms(Math.max(...readyMs))} | ${samples.reduce((n, s) => n + s.conflicts, 0)} |`,
      );
      timelines.push(
        `${version}, ${median.team} (the median, Ready at ${ms(median.readyMs)}): ASO's writes to the identity and its credentials, after the POST:\n  ${median.timeline.join("\n  ")}`,
      );
    }
    console.log(
      [
        `POST → team Ready with real ASO v2.20, federated-credential write window ${FIC_WRITE_WINDOW_MS / 1000} s (${SAMPLES} teams per version after one warm-up, one after another; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB)`,
        "",
        "| templates | p50 | p99 | min | max | Azure 409s |",
        "|---|---|---|---|---|---|",
        ...rows,
        "",
        ...timelines,
        "",
        `ASO: ${JSON.stringify(platform.realAso?.usage())}`,
        `load average (1, 5, 15 min): before ${loadBefore}; after ${load()}`,
      ].join("\n"),
    );
  } finally {
    await platform.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
