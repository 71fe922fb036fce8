import { readFile } from "node:fs/promises";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { etagOf } from "../etag.js";
import { STYLES } from "./styles.js";

/** The status page's stylesheet, script and icon, each at a URL that changes with its content. */

const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0550ae"/><path d="M9 8h9a5 5 0 0 1 1 9.9A5 5 0 0 1 18 26H9zm4 4v4h5a2 2 0 0 0 0-4zm0 7v4h5a2 2 0 0 0 0-4z" fill="#fff"/></svg>`;

interface Asset {
  body: string | Buffer;
  type: string;
  url: string;
}

/** The URLs the pages link to. */
export interface AssetUrls {
  css: string;
  js: string;
}

/** The page's script, built by tsconfig.ui.json into dist/http/ui/client; running from sources, the built copy. */
async function loadClientScript(): Promise<string | undefined> {
  for (const candidate of ["./client/live.js", "../../../dist/http/ui/client/live.js"]) {
    try {
      return await readFile(new URL(candidate, import.meta.url), "utf8");
    } catch {
      // try the next place
    }
  }
  return undefined;
}

/** The assets, loaded once at start-up: the URLs the pages link to, and the route that serves them. */
export interface Assets {
  urls: AssetUrls;
  /** GET /ui/assets/:file. */
  register(app: FastifyInstance): void;
}

export async function loadAssets(log: FastifyBaseLogger): Promise<Assets> {
  const script = await loadClientScript();
  if (!script)
    log.warn(
      "the status page script is not built (apps/api/dist/ui/client/live.js): pages will not refresh themselves",
    );
  const version = (text: string) => etagOf(text).slice(3, 13);
  const css: Asset = { body: STYLES, type: "text/css; charset=utf-8", url: `/ui/assets/ui.css?v=${version(STYLES)}` };
  const js: Asset = {
    body: script ?? "",
    type: "text/javascript; charset=utf-8",
    url: `/ui/assets/live.js?v=${version(script ?? "")}`,
  };
  const assets = new Map<string, Asset>([
    ["ui.css", css],
    ["live.js", js],
    ["favicon.svg", { body: FAVICON, type: "image/svg+xml", url: "/ui/assets/favicon.svg" }],
  ]);
  const register = (app: FastifyInstance) => {
    app.get("/assets/:file", { config: { uiAccess: "public" } }, async (request, reply) => {
      const asset = assets.get((request.params as { file: string }).file);
      if (!asset || (asset === js && !script))
        return reply.code(404).type("text/plain; charset=utf-8").send("not found");
      // Versioned URLs (?v=<content hash>): a new build changes the URL, so the old content can be kept.
      return reply.header("cache-control", "public, max-age=31536000, immutable").type(asset.type).send(asset.body);
    });
  };
  return { urls: { css: css.url, js: js.url }, register };
}
