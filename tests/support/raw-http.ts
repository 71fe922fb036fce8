/**
 * HTTP/1.1 over a bare TCP socket, for tests of what clients like fetch never send: duplicate headers,
 * bad methods, invalid UTF-8, partial requests, idle connections. Parses just enough of the answer.
 */
import { connect, type Socket } from "node:net";

export interface RawResponse {
  status: number;
  /** Header names lowercased; a repeated header keeps every value. */
  headers: Record<string, string[]>;
  body: string;
  /** Parsed body when the answer was JSON (problem+json included). */
  json?: Record<string, unknown>;
}

/** Reads one response from a socket; resolves when it is complete (Content-Length) or the socket ends. */
export function readResponse(socket: Socket): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (partialOk: boolean) => {
      if (done) return;
      const parsed = parse(buf);
      if (parsed && (parsed.complete || partialOk)) {
        done = true;
        socket.off("data", onData);
        resolve(parsed.response);
      } else if (partialOk) {
        done = true;
        reject(
          new Error(
            `connection closed without a complete response (${buf.length} bytes: ${JSON.stringify(buf.toString("latin1").slice(0, 200))})`,
          ),
        );
      }
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      finish(false);
    };
    socket.on("data", onData);
    socket.once("end", () => finish(true));
    socket.once("close", () => finish(true));
    socket.once("error", (err) => {
      if (!done && buf.length === 0) {
        done = true;
        reject(err);
      }
    });
  });
}

function parse(buf: Buffer): { response: RawResponse; complete: boolean } | undefined {
  const end = buf.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const [statusLine, ...lines] = buf.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1] ?? NaN);
  const headers: Record<string, string[]> = {};
  for (const line of lines) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    (headers[name] ??= []).push(line.slice(i + 1).trim());
  }
  const length = Number(headers["content-length"]?.[0] ?? NaN);
  const bodyBytes = buf.subarray(end + 4);
  const complete = Number.isFinite(length) ? bodyBytes.length >= length : false;
  const body = bodyBytes.subarray(0, Number.isFinite(length) ? length : undefined).toString("utf8");
  let json: Record<string, unknown> | undefined;
  if (/json/.test(headers["content-type"]?.[0] ?? "")) {
    try {
      json = JSON.parse(body) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
  }
  return { response: { status, headers, body, json }, complete };
}

/** Opens a connection to 127.0.0.1:port. */
export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Sends `bytes` on a new connection and reads the one response. */
export async function rawRequest(port: number, bytes: string | Buffer): Promise<RawResponse> {
  const socket = await openSocket(port);
  try {
    const response = readResponse(socket);
    socket.write(bytes);
    return await response;
  } finally {
    socket.destroy();
  }
}

/** A request as bytes: `head` lines joined with CRLF, then the body (Content-Length added when a body is given). */
export function requestBytes(head: string[], body?: string | Buffer): Buffer {
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body, "utf8");
  const lines = body === undefined ? head : [...head, `Content-Length: ${payload.length}`];
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), payload]);
}

/** Resolves when the server closes the socket; `closedBy` tells whether it was the server or our own timeout. */
export function waitForClose(
  socket: Socket,
  maxMs: number,
): Promise<{ closedBy: "server" | "timeout"; afterMs: number; data: string }> {
  const started = Date.now();
  let data = "";
  socket.on("data", (d: Buffer) => (data += d.toString("utf8")));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closedBy: "timeout", afterMs: Date.now() - started, data });
    }, maxMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve({ closedBy: "server", afterMs: Date.now() - started, data });
    });
    socket.on("error", () => {});
  });
}
