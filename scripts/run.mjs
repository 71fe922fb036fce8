#!/usr/bin/env node
// The README's commands (`npm start`, `npm test`, `npm run bench`, `npm run image`, `npm run generate`) land here. Each first installs what a
// fresh machine lacks (pnpm, dependencies, builds), so the same two commands work from a clean checkout.
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { testFiles } from "./test-needs.mjs";
import { runPhases, totalCounts } from "./test-phases.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
// BERTH_STATE_DIR moves the local state (Flux repo, token, clone), e.g. for a second copy or a test.
const stateDir = process.env.BERTH_STATE_DIR ? resolve(process.env.BERTH_STATE_DIR) : join(root, ".berth");
const command = process.argv[2];

function fail(message) {
  process.stderr.write(`berth: ${message}\n`);
  process.exit(1);
}

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, {
    cwd: root,
    stdio: "inherit",
    ...options,
    env: { TURBO_TELEMETRY_DISABLED: "1", ...process.env, ...options.env },
  });
  if (result.error) fail(`${cmd} ${args.join(" ")}: ${result.error.message}`);
  return result.status ?? 1;
}

function checkNode() {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < 20 || (major === 20 && minor < 19))
    fail(`Node ${process.versions.node} is too old: Berth needs Node 20.19+ (or 22/24)`);
}

/** pnpm 10, installed globally with npm when missing (corepack's signature checks fail on these machines). */
function pnpmCommand() {
  const probe = spawnSync("pnpm", ["--version"], { encoding: "utf8" });
  if (probe.status === 0 && probe.stdout.startsWith("10.")) return ["pnpm"];
  process.stdout.write("berth: installing pnpm 10 (npm i -g pnpm@10)\n");
  if (run("npm", ["i", "-g", "pnpm@10"]) === 0) return ["pnpm"];
  return ["npx", "-y", "pnpm@10"];
}

function ensureDependencies(pnpm) {
  const marker = join(root, "node_modules", ".pnpm", "lock.yaml");
  const lock = join(root, "pnpm-lock.yaml");
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  process.stdout.write("berth: installing dependencies (pnpm install --frozen-lockfile)\n");
  if (run(pnpm[0], [...pnpm.slice(1), "install", "--frozen-lockfile"]) !== 0) fail("pnpm install failed");
}

function turbo(pnpm, task, ...filters) {
  const args = [
    ...pnpm.slice(1),
    "exec",
    "turbo",
    "run",
    task,
    "--output-logs=errors-only",
    ...filters.map((f) => `--filter=${f}`),
  ];
  return run(pnpm[0], args);
}

/** A word as a POSIX shell reads it back: quoted only when it must be. */
function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/** The embedded default: a local bare repository as the Flux repo, the dev token, infra/local/berth.yaml. */
function localDefaults() {
  mkdirSync(stateDir, { recursive: true });
  const bare = join(stateDir, "flux-repo.git");
  if (!existsSync(bare)) {
    if (run("git", ["init", "--quiet", "--bare", "--initial-branch=main", bare]) !== 0)
      fail("cannot create the local Flux repo");
  }
  const tokenFile = join(stateDir, "dev-token");
  if (!existsSync(tokenFile))
    writeFileSync(tokenFile, `berth-dev-${randomBytes(18).toString("base64url")}\n`, { mode: 0o600 });
  const defaults = {
    BERTH_CONFIG_FILE: join(root, "infra", "local", "berth.yaml"),
    BERTH_GIT_URL: pathToFileURL(bare).href,
    BERTH_GIT_WORKDIR: join(stateDir, "work"),
    BERTH_AUTH_MODE: "dev",
    BERTH_DEV_TOKEN: readFileSync(tokenFile, "utf8").trim(),
  };
  // Anything the caller set wins; the defaults only fill gaps.
  return process.env.BERTH_CONFIG_FILE ? { ...process.env } : { ...defaults, ...process.env };
}

/** `.berth/bin/berth`: the built CLI, for `export PATH=...` (a script, so no exec bit is needed on dist/). */
function cliShim() {
  const bin = join(stateDir, "bin");
  mkdirSync(bin, { recursive: true });
  const shim = join(bin, "berth");
  writeFileSync(
    shim,
    `#!/bin/sh\nexec "${process.execPath}" "${join(root, "apps", "cli", "dist", "main.js")}" "$@"\n`,
    { mode: 0o755 },
  );
  return bin;
}

/** What to try with the CLI and the status page, once the API says where it listens. */
function cliBanner(url, bin, tokenFile) {
  const example = join(root, "examples", "teams", "payments.yaml");
  return [
    "Or with the berth CLI (docs/cli.md): the export puts it on PATH in this shell; login saves a context in ~/.config/berth.",
    `  export PATH=${shellWord(bin)}:"$PATH"`,
    `  berth login --server ${url} --token-file ${shellWord(tokenFile)}`,
    `  berth diff -f ${shellWord(example)}`,
    `  berth apply -f ${shellWord(example)}`,
    "  berth get teams",
    "  berth status payments",
    `The development token (for the status page's sign-in too) is in ${tokenFile}`,
    "",
  ].join("\n");
}

function start(pnpm) {
  if (turbo(pnpm, "build", "@berth/api...", "@berth/cli...") !== 0) fail("build failed");
  const env = localDefaults();
  const bin = cliShim();
  // The CLI lines name .berth/dev-token: only right when that file holds the token the API checks.
  let ownToken = !process.env.BERTH_CONFIG_FILE && !process.env.BERTH_DEV_TOKEN;
  const child = spawn(process.execPath, [join(root, "apps", "api", "dist", "main.js")], {
    cwd: root,
    stdio: ["inherit", "pipe", "inherit"],
    env,
  });
  // Pass the API's output through; after its banner, add the CLI's (only the API knows the address it got).
  let url;
  createInterface({ input: child.stdout }).on("line", (line) => {
    process.stdout.write(`${line}\n`);
    url ??= /^Berth is running at (\S+) /.exec(line)?.[1];
    // The API's banner ends with an empty line: the CLI's follows it.
    if (url && line === "" && ownToken) {
      process.stdout.write(cliBanner(url, bin, join(stateDir, "dev-token")));
      url = undefined;
      ownToken = false;
    }
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

/**
 * The test cluster's components (kube-apiserver, etcd, Flux, ASO) and Gitea, built from their Go modules in the
 * background while the rest of the set-up runs: on a new machine that build is most of the wait
 * (docs/operations-test-cluster.md). In two stages: `first` (ensure-binaries.sh's arguments: every cluster component
 * but ASO's controller, ASO's CRDs included) and then `last` (Gitea and ASO's controller, by far the longest, built at
 * a lower priority: the cluster's other tests run meanwhile). Progress goes to .berth/ensure-binaries.log; each
 * stage resolves with its exit code and the seconds since the build started.
 */
function startClusterBuild({ first, last }) {
  mkdirSync(stateDir, { recursive: true });
  const log = join(stateDir, "ensure-binaries.log");
  const started = Date.now();
  writeFileSync(log, "");
  const stage = (components, nice) =>
    new Promise((resolve) => {
      if (components.length === 0) return resolve({ code: 0, log, seconds: 0, nothing: true });
      const script = [join(root, "infra", "test-cluster", "ensure-binaries.sh"), ...components];
      const child = spawn(nice ? "nice" : "bash", nice ? ["-n", "10", "bash", ...script] : script, {
        cwd: root,
        stdio: ["ignore", openSync(log, "a"), openSync(log, "a")],
      });
      child.on("error", () => resolve({ code: 1, log, seconds: 0 }));
      child.on("exit", (code) => resolve({ code: code ?? 1, log, seconds: Math.round((Date.now() - started) / 1000) }));
    });
  if (first.length + last.length > 0)
    process.stdout.write(
      `berth: building the test components (${[...first, ...last].join(", ")}) in the background (log: ${log})\n`,
    );
  const firstDone = stage(first, false);
  const lastDone = firstDone.then((r) => (r.code === 0 ? stage(last, true) : r));
  return { first: firstDone, last: lastDone };
}

/** The needs (scripts/test-needs.mjs) that ensure-binaries.sh builds. */
const GO_NEEDS = ["cluster", "gitea", "aso"];

/** What ensure-binaries.sh builds for tests needing `needs` (scripts/test-needs.mjs), in the two stages above. */
function goStages(needs) {
  return {
    first: needs("cluster") ? ["cluster-but-aso"] : [],
    last: [...(needs("gitea") ? ["gitea"] : []), ...(needs("aso") ? ["aso"] : [])],
  };
}

/**
 * What `npm test -- <file or folder> …` selected, with the union of what those files declare they need
 * (scripts/test-needs.mjs); undefined without a path: the whole suite, which needs everything.
 */
function selectedTests() {
  const paths = process.argv.slice(3).filter((a) => !a.startsWith("-"));
  if (paths.length === 0) return undefined;
  const wanted = paths.map((p) =>
    resolve(p)
      .slice(root.length + 1)
      .replace(/\/+$/, ""),
  );
  const files = testFiles(root).filter((t) =>
    wanted.some((w) => w === "" || t.file === w || t.file.startsWith(`${w}/`)),
  );
  return { files: files.map((t) => t.file), needs: new Set(files.flatMap((t) => t.needs)) };
}

async function test(pnpm, clusterBuild, selection) {
  const needs = (need) => !selection || selection.needs.has(need);
  if (selection)
    process.stdout.write(
      `berth: ${selection.files.length} test file(s), needing ${[...selection.needs].join(", ") || "nothing but Node and git"}\n`,
    );
  // The habits CI enforces (README.md): found in a minute, before the half hour of builds and tests.
  // Skipped for a chosen file: it prepares only what that file needs.
  if (!selection) {
    if (turbo(pnpm, "typecheck") !== 0) {
      process.stdout.write("typecheck failed\n0 passed, 1 failed\n");
      process.exit(1);
    }
    for (const [name, script] of [
      ["lint", "lint"],
      ["format check", "format:check"],
    ]) {
      if (run(pnpm[0], [...pnpm.slice(1), "run", "--silent", script]) !== 0) {
        process.stdout.write(`${name} failed (npm run ${script})\n0 passed, 1 failed\n`);
        process.exit(1);
      }
    }
  }
  // Debian tools first (sshd, ...); a missing tool fails the run, it never skips tests.
  if (
    ["sshd", "chromium", "tmux", "image"].some(needs) &&
    run("bash", [join(root, "infra", "test-tools", "ensure-tools.sh")]) !== 0
  ) {
    process.stdout.write(
      "could not install the Debian packages the tests need (infra/test-tools/debian-packages.txt)\n0 passed, 1 failed\n",
    );
    process.exit(1);
  }
  // The CLI, the API and the controller run as processes in tests (from dist/, as in production).
  if ((needs("dist") || needs("image")) && turbo(pnpm, "build") !== 0) {
    process.stdout.write("build failed\n0 passed, 1 failed\n");
    process.exit(1);
  }
  // The image the smoke tests (tests/image) run: built here, before vitest, so the tests themselves stay quick.
  if (needs("image")) {
    const imageStart = Date.now();
    if (buildImage([], { tools: false }) !== 0) {
      process.stdout.write("could not build the image (npm run image; infra/image/build.mjs)\n0 passed, 1 failed\n");
      process.exit(1);
    }
    process.stdout.write(
      `berth: image built in ${((Date.now() - imageStart) / 1000).toFixed(1)} s (.berth/image/berth.oci.tar)\n`,
    );
  }
  if (selection) {
    // The files given: once everything they need is built, one run with the arguments as given.
    if (!(await componentsReady(clusterBuild.first)) || !(await componentsReady(clusterBuild.last))) process.exit(1);
    const counts = await vitest(pnpm, "test-results.json", process.argv.slice(3));
    printNotPassed(counts.notPassed);
    process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
    process.exit(counts.status !== 0 || counts.failed > 0 || counts.passed === 0 ? 1 : 0);
  }
  // The whole suite in three runs, each as soon as what it needs is built (scripts/test-phases.mjs): the files that
  // need no Go component from the start, at a lower priority (the build is what everything else waits for), beside
  // the build and then beside the cluster's, which start the moment the cluster is built; those of Gitea and ASO
  // after the cluster's (ASO's tests load the machine most) once Gitea and ASO's controller are built.
  const all = testFiles(root);
  // Options given (`npm test -- --bail=1`) apply to each run.
  const flags = process.argv.slice(3).filter((a) => a.startsWith("-"));
  const late = (t) => t.needs.includes("gitea") || t.needs.includes("aso");
  const phases = [
    {
      name: "without Go components",
      files: all.filter((t) => t.needs.every((n) => !GO_NEEDS.includes(n))),
      // Its output is printed in one block when it ends, so it does not interleave with the cluster's.
      background: true,
    },
    {
      name: "the cluster's",
      files: all.filter((t) => t.needs.includes("cluster") && !late(t)),
      ready: clusterBuild.first,
    },
    {
      name: "Gitea's and ASO's",
      files: all.filter(late),
      ready: clusterBuild.last,
      after: ["the cluster's"],
    },
  ];
  const outcomes = await runPhases(phases, {
    componentsReady,
    run: async (phase, i) => {
      const title = `tests ${i + 1}/${phases.length}, ${phase.name}: ${phase.files.length} file(s)`;
      const files = [...flags, ...phase.files.map((t) => join(root, t.file))];
      if (!phase.background) {
        process.stdout.write(`\nberth: ${title}\n`);
        return vitest(pnpm, `test-results-${i + 1}.json`, files);
      }
      const output = join(stateDir, `test-output-${i + 1}.log`);
      process.stdout.write(`\nberth: ${title}, in the background (output: ${output})\n`);
      const counts = await vitest(pnpm, `test-results-${i + 1}.json`, files, { nice: true, output });
      process.stdout.write(`\nberth: ${title}, ended:\n${readFileSync(output, "utf8")}\nberth: end of ${title}\n`);
      return counts;
    },
  });
  const total = totalCounts(outcomes);
  printNotPassed(total.notPassed);
  process.stdout.write(`\n${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`);
  process.exit(total.status !== 0 || total.failed > 0 || total.passed === 0 ? 1 : 0);
}

/** Waits for a build stage; false (after printing why) when it failed. */
async function componentsReady(stage) {
  const built = await stage;
  if (built.nothing) return true;
  const summary = readFileSync(built.log, "utf8")
    .split("\n")
    .filter((l) => /built in|in place after|done in|ERROR/.test(l));
  process.stdout.write(`${summary.join("\n")}\nberth: test components ready after ${built.seconds} s\n`);
  if (built.code === 0) return true;
  process.stdout.write(`${readFileSync(built.log, "utf8").split("\n").slice(-30).join("\n")}\n`);
  process.stdout.write(
    "could not build the test cluster's components (infra/test-cluster/ensure-binaries.sh)\n0 passed, 1 failed\n",
  );
  return false;
}

/**
 * One vitest run (its JSON report in the state folder), at a lower priority when `nice`, its output to the file
 * `output` when given; resolves with its exit status and counts.
 */
function vitest(pnpm, reportName, args, { nice = false, output } = {}) {
  mkdirSync(stateDir, { recursive: true });
  const report = join(stateDir, reportName);
  // A run that dies before writing its report must not be counted from an earlier one.
  rmSync(report, { force: true });
  const command = [
    pnpm[0],
    ...pnpm.slice(1),
    "exec",
    "vitest",
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...args,
  ];
  const [cmd, ...rest] = nice ? ["nice", "-n", "10", ...command] : command;
  return new Promise((resolve) => {
    const out = output ? openSync(output, "w") : "inherit";
    const child = spawn(cmd, rest, {
      cwd: root,
      stdio: [output ? "ignore" : "inherit", out, out],
      env: { TURBO_TELEMETRY_DISABLED: "1", ...process.env },
    });
    let settled = false;
    const settle = (counts) => {
      if (settled) return;
      settled = true;
      if (typeof out === "number") closeSync(out);
      resolve(counts);
    };
    child.once("error", (err) =>
      settle({ status: 1, passed: 0, failed: 1, skipped: 0, notPassed: [`vitest did not start: ${err.message}`] }),
    );
    child.once("exit", (code) => settle({ status: code ?? 1, ...testCounts(report) }));
  });
}

/** The counts in vitest's JSON report; a report that cannot be read counts as one failure. */
function testCounts(report) {
  try {
    const results = JSON.parse(readFileSync(report, "utf8"));
    // A file that fails to load has no failed test but a failed suite: count it, so it cannot pass.
    const failed =
      results.numFailedTests === 0 && results.numFailedTestSuites > 0
        ? results.numFailedTestSuites
        : results.numFailedTests;
    return {
      passed: results.numPassedTests,
      failed,
      skipped: results.numPendingTests + results.numTodoTests,
      notPassed: notPassed(results),
    };
  } catch {
    return { passed: 0, failed: 1, skipped: 0, notPassed: [`${report}: no report (the run died before writing it)`] };
  }
}

/**
 * One line per test that did not pass (and per file that failed without a failed test, e.g. in a hook), with the
 * first line of its error: printed just above the counts, so the tail of a CI log names what to look at.
 */
function notPassed(results) {
  const lines = [];
  const firstLine = (text) =>
    String(text ?? "")
      .split("\n")
      .find((l) => l.trim()) ?? "";
  for (const file of results.testResults ?? []) {
    const name = file.name?.startsWith(root) ? file.name.slice(root.length + 1) : file.name;
    const tests = (file.assertionResults ?? []).filter((t) => t.status !== "passed");
    for (const t of tests)
      lines.push(
        `${t.status} ${name} > ${t.fullName}${t.failureMessages?.length ? `: ${firstLine(t.failureMessages[0])}` : ""}`,
      );
    if (file.status === "failed" && !tests.some((t) => t.status === "failed"))
      // vitest's JSON report carries no hook error: the tests of a describe whose beforeAll failed show as skipped.
      lines.push(`failed ${name}: ${firstLine(file.message) || "a hook failed (its error is in the log above)"}`);
  }
  return lines.map((l) => (l.length > 400 ? `${l.slice(0, 400)}…` : l));
}

/** The tests that did not pass, if any, as the last thing before the counts. */
function printNotPassed(lines) {
  if (lines.length === 0) return;
  const shown = lines.slice(0, 40);
  process.stdout.write(`\nberth: did not pass (${lines.length}):\n${shown.map((l) => `  ${l}`).join("\n")}\n`);
  if (lines.length > shown.length) process.stdout.write(`  … and ${lines.length - shown.length} more\n`);
}

/** The OCI image (infra/image/build.mjs), after the Debian tools it needs (mmdebstrap, ...). */
function buildImage(args = [], { tools = true } = {}) {
  if (tools && run("bash", [join(root, "infra", "test-tools", "ensure-tools.sh")]) !== 0) return 1;
  return run(process.execPath, [join(root, "infra", "image", "build.mjs"), ...args]);
}

/**
 * The fast lane: every test file that declares no need (scripts/test-needs.mjs: no cluster, no build, no image,
 * no Debian tool), or the files given, with nothing built or installed first. `npm run test:unit --
 * tests/e2e/teams.test.ts` runs one file in seconds on a fresh clone. A file that uses something it did not
 * declare fails, naming the line to add (tests/support/needs.ts).
 */
function unitTests(pnpm) {
  const files = process.argv.slice(3);
  const selection = files.length
    ? files
    : testFiles(root)
        .filter((t) => t.needs.length === 0)
        .map((t) => t.file);
  process.exit(run(pnpm[0], [...pnpm.slice(1), "exec", "vitest", "run", ...selection]));
}

/** TypeScript run as the tests run it: workspace packages from their sources (tests/tsconfig.json's paths). */
function tsx(pnpm, file, args) {
  return run(pnpm[0], [
    ...pnpm.slice(1),
    "exec",
    "tsx",
    "--tsconfig",
    join(root, "tests", "tsconfig.json"),
    file,
    ...args,
  ]);
}

/** `npm run generate [-- --check]`: every generated file of the repository (scripts/generate.ts lists them). */
function generate(pnpm) {
  process.exit(tsx(pnpm, join(root, "scripts", "generate.ts"), process.argv.slice(3)));
}

/** `npm run bench [-- <name> [args]]`: tests/bench/<name>.ts (onboarding, controller, arm-calls). */
function bench(pnpm) {
  const [name = "onboarding", ...args] = process.argv.slice(3).filter((a) => !a.startsWith("-"));
  const flags = process.argv.slice(3).filter((a) => a.startsWith("-"));
  const file = join(root, "tests", "bench", `${name}.ts`);
  if (!existsSync(file)) fail(`no benchmark "${name}": see tests/bench/`);
  process.exit(tsx(pnpm, file, [...args, ...flags]));
}

checkNode();
// Started first: it needs only Go, and it is the longest part of a new machine's set-up.
const selection = command === "test" ? selectedTests() : undefined;
// What the tests need of Go: the cluster's components, Gitea (only the tests of a forge), ASO's controller (only the
// tests that run ASO), or all of them (the whole suite).
const clusterBuild =
  command === "test" ? startClusterBuild(goStages((need) => !selection || selection.needs.has(need))) : undefined;
const pnpm = pnpmCommand();
ensureDependencies(pnpm);
if (command === "start") start(pnpm);
else if (command === "test") await test(pnpm, clusterBuild, selection);
else if (command === "unit") unitTests(pnpm);
else if (command === "bench") bench(pnpm);
else if (command === "image") process.exit(buildImage(process.argv.slice(3)));
else if (command === "generate") generate(pnpm);
else fail(`unknown command "${command}": use start, test, unit, bench, image or generate`);
