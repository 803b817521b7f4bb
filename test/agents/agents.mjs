// The agents the harness runs: how to start each installed build over ACP and
// how to point it at the scripted model in a private HOME. Versions come from
// package.json (pkgs/<id>/package.json pins each one; package-lock.json
// pins everything they pull in).
//
// Each agent has one or more variants: a name for the recording, whether the
// client advertises _meta.terminal_output, and agent settings.

import fs from "node:fs";
import path from "node:path";

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
    variants: [{ name: "bash-ask", terminalMeta: false }],
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
];

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

// node agents.mjs list [ID...]: one line per agent variant to run:
// "ID VARIANT WORKSPACE", every agent when no ID is given.
if (import.meta.url === `file://${process.argv[1]}` && process.argv[2] === "list") {
  const ids = process.argv.slice(3);
  for (const id of ids) {
    if (!findAgent(id)) {
      console.error(`unknown agent ${id}; known: ${AGENTS.map((a) => a.id).join(", ")}`);
      process.exit(2);
    }
  }
  for (const a of AGENTS) {
    if (ids.length && !ids.includes(a.id)) continue;
    for (const v of a.variants) console.log(`${a.id} ${v.name} pkgs/${a.id}`);
  }
}
