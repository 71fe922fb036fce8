/** A bare HTTPS client (node:https) for talking to the fake without the Azure SDK. */
import { Agent, request } from "node:https";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function createRawClient(ca: string) {
  const agent = new Agent({ ca, keepAlive: true, maxSockets: 4 });
  return {
    send(
      url: string,
      init: { method?: string; headers?: Record<string, string>; body?: string } = {},
    ): Promise<RawResponse> {
      return new Promise((resolve, reject) => {
        const body = init.body ?? "";
        const headers: Record<string, string> = { ...init.headers };
        if (body.length > 0) headers["Content-Length"] = String(Buffer.byteLength(body));
        const req = request(url, { method: init.method ?? "GET", headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const h: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers))
              if (v !== undefined) h[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
            resolve({ status: res.statusCode ?? 0, headers: h, body: Buffer.concat(chunks).toString("utf8") });
          });
          res.on("error", reject);
        });
        req.on("error", reject);
        req.end(body.length > 0 ? body : undefined);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
