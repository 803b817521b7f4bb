// Tests connect()'s TLS, mutual TLS and bearer token, with certificates made
// at test time by internal/testcerts: against in-process gRPC servers that
// require them (they check what the client sends), and against the real
// acpnormd serving mutual TLS and requiring a token.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import { type AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  Code,
  ConnectError,
  connect,
  DialectInfoSchema,
  Folder,
  FrameErrorSchema,
  isShellExec,
  NormalizerService,
  normalizeLines,
  parseAcpLine,
  SessionClient,
  ShellState,
  type ConnectOptions,
} from "../src/index.js";
import { recordingsDir, startServer, testCerts, type RunningServer } from "./server.js";

const dir = testCerts();
const file = (name: string) => join(dir, name);
const token = readFileSync(file("token"), "utf8").trim();

/** Serves NormalizerService, answering only calls with the right token. */
function routes(seen: (string | null)[]) {
  const check = (ctx: HandlerContext) => {
    const auth = ctx.requestHeader.get("authorization");
    seen.push(auth);
    if (auth !== `Bearer ${token}`) throw new ConnectError("missing or wrong bearer token", Code.Unauthenticated);
  };
  return (router: ConnectRouter) =>
    router.service(NormalizerService, {
      listDialects(_req, ctx) {
        check(ctx);
        return { dialects: [create(DialectInfoSchema, { name: "generic" })] };
      },
      async *normalize(reqs, ctx) {
        check(ctx);
        for await (const r of reqs) {
          if (r.kind.case === "frame") {
            yield {
              kind: {
                case: "frameError",
                value: create(FrameErrorSchema, { sessionId: r.kind.value.sessionId, sequence: r.kind.value.sequence, code: 3, message: "echo" }),
              },
            };
          }
        }
      },
      getClientCapabilities(_req, ctx) {
        check(ctx);
        return {};
      },
    });
}

interface TestServer {
  addr: string;
  seen: (string | null)[];
  close(): Promise<void>;
}

async function serve(mode: "mtls" | "tls" | "plain"): Promise<TestServer> {
  const seen: (string | null)[] = [];
  const handler = connectNodeAdapter({ routes: routes(seen) });
  const server =
    mode === "plain"
      ? http2.createServer(handler)
      : http2.createSecureServer(
          {
            cert: readFileSync(file("server.pem")),
            key: readFileSync(file("server.key")),
            ...(mode === "mtls" ? { ca: readFileSync(file("ca.pem")), requestCert: true, rejectUnauthorized: true } : {}),
          },
          handler,
        );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    addr: `127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((ok) => {
        for (const s of sessions) s.destroy();
        server.close(() => ok());
      }),
  };
}

/** The code of ListDialects and of a Normalize stream; undefined when OK. */
async function code(addr: string, opts: ConnectOptions): Promise<Code | undefined> {
  const { client, close } = connect(addr, opts);
  const codes: (Code | undefined)[] = [];
  try {
    for (const call of [
      () => client.listDialects({}, { timeoutMs: 10_000 }),
      async () => {
        for await (const _ of normalizeLines(client, ['{"jsonrpc":"2.0"}'], { sessionId: "s" }));
      },
    ]) {
      try {
        await call();
        codes.push(undefined);
      } catch (err) {
        codes.push(ConnectError.from(err).code);
      }
    }
  } finally {
    close();
  }
  assert.equal(codes[0], codes[1], "unary and stream calls disagree");
  return codes[0];
}

describe("connect with TLS and a token", () => {
  let mtls: TestServer, tls: TestServer, plain: TestServer;
  const full: ConnectOptions = { caFile: file("ca.pem"), certFile: file("client.pem"), keyFile: file("client.key"), tokenFile: file("token") };
  const serverOnly: ConnectOptions = { caFile: file("ca.pem"), tokenFile: file("token") };
  before(async () => {
    [mtls, tls, plain] = await Promise.all([serve("mtls"), serve("tls"), serve("plain")]);
  });
  after(async () => {
    await Promise.all([mtls?.close(), tls?.close(), plain?.close()]);
  });

  it("reaches a server that requires mutual TLS and a token", async () => {
    mtls.seen.length = 0;
    assert.equal(await code(mtls.addr, full), undefined);
    assert.deepEqual(mtls.seen, [`Bearer ${token}`, `Bearer ${token}`]);
  });

  it("reaches a TLS server, checking its name", async () => {
    assert.equal(await code(tls.addr, serverOnly), undefined);
    assert.equal(await code(tls.addr, { ...serverOnly, serverName: "localhost" }), undefined);
    assert.equal(await code(tls.addr, { ...serverOnly, ca: readFileSync(file("ca.pem"), "utf8"), caFile: undefined }), undefined);
  });

  it("sends a token over loopback plaintext", async () => {
    plain.seen.length = 0;
    assert.equal(await code(plain.addr, { token }), undefined);
    assert.deepEqual(plain.seen, [`Bearer ${token}`, `Bearer ${token}`]);
  });

  it("is refused without the right token, certificate or CA", async () => {
    // A refused handshake fails the call with a code that connect-node picks
    // from how the connection broke (Unavailable, Internal, or Canceled when
    // TLS 1.3 let the client finish before the server rejected its
    // certificate): any failure but Unauthenticated, which would mean the
    // server let the connection in.
    const transport = [Code.Unavailable, Code.Internal, Code.Canceled];
    const cases: [string, () => string, ConnectOptions, Code | Code[]][] = [
      ["wrong token", () => mtls.addr, { ...full, tokenFile: file("wrong-token") }, Code.Unauthenticated],
      ["no token", () => mtls.addr, { ...full, tokenFile: undefined }, Code.Unauthenticated],
      ["no token, plaintext", () => plain.addr, {}, Code.Unauthenticated],
      ["no client certificate", () => mtls.addr, serverOnly, transport],
      ["client certificate of another CA", () => mtls.addr, { ...full, certFile: file("other-client.pem"), keyFile: file("other-client.key") }, transport],
      ["server certificate from a CA not trusted", () => tls.addr, { ...serverOnly, caFile: file("other-ca.pem") }, transport],
      ["wrong server name", () => tls.addr, { ...serverOnly, serverName: "elsewhere.example" }, transport],
      ["plaintext to a TLS server", () => tls.addr, { token }, transport],
    ];
    for (const [name, addr, opts, want] of cases) {
      const got = await code(addr(), opts);
      const wants = Array.isArray(want) ? want : [want];
      assert.ok(got !== undefined && wants.includes(got), `${name}: got ${got === undefined ? "OK" : Code[got]}, want ${wants.map((c) => Code[c]).join(" or ")}`);
    }
  });

  it("refuses options that do not go together", () => {
    assert.throws(() => connect("127.0.0.1:1", { caFile: file("ca.pem"), certFile: file("client.pem") }), /go together/);
    assert.throws(() => connect("127.0.0.1:1", { token: "a", tokenFile: file("token") }), /not both/);
    assert.throws(() => connect("127.0.0.1:1", { token: "" }), /empty or spans lines/);
    assert.throws(() => connect("127.0.0.1:1", { token: "a\nb" }), /empty or spans lines/);
    assert.throws(() => connect("http://127.0.0.1:1", { caFile: file("ca.pem") }), /http:\/\//);
  });
});

describe("connect to acpnormd serving mutual TLS and requiring a token", () => {
  let server: RunningServer;
  const full: ConnectOptions = { caFile: file("ca.pem"), certFile: file("client.pem"), keyFile: file("client.key"), tokenFile: file("token") };
  before(async () => {
    server = await startServer(
      ["--tls-cert", file("server.pem"), "--tls-key", file("server.key"), "--tls-client-ca", file("ca.pem"), "--auth-token-file", file("token")],
      full,
    );
  });
  after(async () => {
    await server?.stop();
  });

  it("streams a Session over it", async () => {
    const lines = readFileSync(join(recordingsDir, "codex-acp-0.16.0_shell-command_terminal-meta.ndjson"), "utf8").split("\n");
    const sc = new SessionClient([server.addr], full);
    try {
      const s = sc.session("ts-tls-session");
      for (const line of lines) {
        const acp = parseAcpLine(line);
        if (acp) s.send(acp.direction, acp.message);
      }
      await s.close(AbortSignal.timeout(30_000));
      const x = s.call("call_exit3_3");
      assert.equal(x?.state, ShellState.ENDED);
      assert.equal(x?.exitCode, 3);
      assert.deepEqual(s.frameErrors(), []);
    } finally {
      sc.close();
    }
  });

  it("normalizes a recording", async () => {
    const lines = readFileSync(join(recordingsDir, "codex-acp-0.16.0_shell-command_terminal-meta.ndjson"), "utf8").split("\n");
    const { client, close } = connect(server.addr, full);
    const folder = new Folder();
    try {
      for await (const r of normalizeLines(client, lines, { sessionId: "ts-tls" })) {
        if (!isShellExec(r)) assert.fail(`frame error seq=${r.sequence}: ${r.message}`);
        folder.apply(r);
      }
    } finally {
      close();
    }
    const ended = folder.calls().map((k) => folder.state(k)!).filter((s) => s.command.includes("exit 3"));
    assert.equal(ended.length, 1);
    assert.equal(ended[0].state, ShellState.ENDED);
    assert.equal(ended[0].exitCode, 3);
  });

  it("is refused without the right token or certificate", async () => {
    const transport = [Code.Unavailable, Code.Internal, Code.Canceled];
    const cases: [string, ConnectOptions, Code[]][] = [
      ["wrong token", { ...full, tokenFile: file("wrong-token") }, [Code.Unauthenticated]],
      ["no token", { ...full, tokenFile: undefined }, [Code.Unauthenticated]],
      ["no client certificate", { caFile: file("ca.pem"), tokenFile: file("token") }, transport],
      ["client certificate of another CA", { ...full, certFile: file("other-client.pem"), keyFile: file("other-client.key") }, transport],
    ];
    for (const [name, opts, want] of cases) {
      const got = await code(server.addr, opts);
      assert.ok(got !== undefined && want.includes(got), `${name}: got ${got === undefined ? "OK" : Code[got]}, want ${want.map((c) => Code[c]).join(" or ")}`);
    }
    assert.ok(server.alive(), server.log());
  });
});
