/** Loader for go-vcr `version: 1` cassettes (as kept in shared/arm-recordings). */
import { readFileSync } from "node:fs";
import { parse } from "yaml";

export interface CassetteInteraction {
  index: number;
  request: { method: string; url: string; headers: Record<string, string[]>; body: string };
  response: { code: number; status: string; headers: Record<string, string[]>; body: string };
}

export function loadCassette(file: string): CassetteInteraction[] {
  const doc = parse(readFileSync(file, "utf8")) as {
    version: number;
    interactions: Array<{
      request: { method: string; url: string; headers?: Record<string, string[]>; body?: string };
      response: { code: number; status: string; headers?: Record<string, string[]>; body?: string };
    }>;
  };
  if (doc.version !== 1) throw new Error(`${file}: expected a go-vcr version 1 cassette, got version ${doc.version}`);
  return doc.interactions.map((i, index) => ({
    index,
    request: {
      method: i.request.method,
      url: i.request.url,
      headers: i.request.headers ?? {},
      body: i.request.body ?? "",
    },
    response: {
      code: i.response.code,
      status: i.response.status,
      headers: i.response.headers ?? {},
      body: i.response.body ?? "",
    },
  }));
}

/** First value of a header, case-insensitive. */
export function header(headers: Record<string, string[]>, name: string): string | undefined {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  return key ? headers[key]?.[0] : undefined;
}
