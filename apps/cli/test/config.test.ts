import { chmod, mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkServerUrl, configPath, loadCliConfig, saveCliConfig, upsertContext } from "../src/config.js";
import { readTokenFile, resolveToken } from "../src/credentials.js";

describe("CLI config and tokens", () => {
  it("finds the config like other CLIs do", () => {
    expect(configPath({ BERTH_CLI_CONFIG: "/x/c.yaml", HOME: "/h" })).toBe("/x/c.yaml");
    expect(configPath({ XDG_CONFIG_HOME: "/xdg", HOME: "/h" })).toBe("/xdg/berth/config.yaml");
    expect(configPath({ HOME: "/h" })).toBe("/h/.config/berth/config.yaml");
  });

  it("saves owner-only and reads back, refusing a config it does not understand", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-cli-config-"));
    const file = join(dir, "nested", "config.yaml");
    const config = upsertContext(await loadCliConfig(file), {
      name: "local",
      server: "http://127.0.0.1:8080",
      auth: { token: "t" },
    });
    await saveCliConfig(file, { ...config, currentContext: "local" });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await loadCliConfig(file)).toMatchObject({
      currentContext: "local",
      contexts: [{ name: "local", auth: { token: "t" } }],
    });
    await writeFile(file, "contexts:\n  - name: x\n    server: ftp://nope\n");
    await expect(loadCliConfig(file)).rejects.toMatchObject({ details: ["contexts.0.server: must be an http(s) URL"] });
  });

  it("refuses a config that holds a token when others can read it; a config without one may be shared", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-cli-config-"));
    const file = join(dir, "config.yaml");
    await saveCliConfig(
      file,
      upsertContext(await loadCliConfig(file), {
        name: "local",
        server: "http://127.0.0.1:8080",
        auth: { token: "stored-secret" },
      }),
    );
    await chmod(file, 0o644);
    await expect(loadCliConfig(file)).rejects.toMatchObject({
      exitCode: 5,
      message: `the CLI config ${file} holds a token and is readable by others (mode 644): run chmod 600 ${file}`,
    });
    await saveCliConfig(file, {
      apiVersion: "berth.dev/v1",
      kind: "CliConfig",
      contexts: [{ name: "shared", server: "https://berth.example.com", auth: { tokenFile: "/home/me/token" } }],
    });
    await chmod(file, 0o644);
    expect((await loadCliConfig(file)).contexts[0]!.name).toBe("shared");
  });

  it("refuses a server URL with a user name or password, without repeating it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-cli-config-"));
    const file = join(dir, "config.yaml");
    await writeFile(file, "contexts:\n  - name: x\n    server: https://me:hunter2@berth.example.com\n", {
      mode: 0o600,
    });
    const refused = (await loadCliConfig(file).catch((err: unknown) => err)) as { details: string[]; message: string };
    expect(refused.details).toEqual([
      "contexts.0.server: must not hold a user name or password (user:password@): Berth takes a bearer token (--token-file)",
    ]);
    expect(JSON.stringify(refused)).not.toContain("hunter2");
    expect(() => checkServerUrl("https://me:hunter2@berth.example.com", "--server")).toThrow(
      "--server: the server URL must not hold a user name or password (user:password@): Berth takes a bearer token (--token-file)",
    );
  });

  it("takes the token from the flag, then BERTH_TOKEN, then a private file, then the context", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-cli-token-"));
    const file = join(dir, "token");
    await writeFile(file, "from-file\n", { mode: 0o600 });
    const base = { env: {}, cwd: dir, context: { token: "from-context" } };
    expect(await resolveToken({ ...base, flagToken: "from-flag", env: { BERTH_TOKEN: "from-env" } })).toBe("from-flag");
    expect(await resolveToken({ ...base, env: { BERTH_TOKEN: "from-env" }, flagTokenFile: file })).toBe("from-env");
    expect(await resolveToken({ ...base, flagTokenFile: "token" })).toBe("from-file");
    expect(await resolveToken(base)).toBe("from-context");
    await expect(resolveToken({ env: {}, cwd: dir })).rejects.toMatchObject({ exitCode: 5 });
    await chmod(file, 0o640);
    await expect(readTokenFile(file, dir)).rejects.toThrow(/readable by others \(mode 640\): run chmod 600/);
  });

  it("asks the Azure CLI for a token when the context says so, and explains when az is missing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "berth-cli-az-"));
    // A stand-in `az` on PATH that answers like `az account get-access-token --query accessToken -o tsv`.
    await writeFile(join(dir, "az"), `#!/bin/sh\necho "$@" > "${join(dir, "args")}"\necho token-from-az\n`, {
      mode: 0o755,
    });
    const token = await resolveToken({ env: { PATH: dir }, cwd: dir, context: { azure: { resource: "api://berth" } } });
    expect(token).toBe("token-from-az");
    expect((await readFile(join(dir, "args"), "utf8")).trim()).toBe(
      "account get-access-token --resource api://berth --query accessToken --output tsv",
    );
    await expect(
      resolveToken({ env: { PATH: join(dir, "none") }, cwd: dir, context: { azure: { resource: "api://berth" } } }),
    ).rejects.toThrow(/az` is not on PATH/);
  });
});
