import { runEngineCase } from "./driver.ts";
import { runHostedCase } from "./hosted.ts";
import { HOSTED_INTENTS } from "./table.ts";
import { matrixFamily } from "./tally.ts";

// Crash matrix, tools family (QUALITY R1): the tools leaf at its four positions (a call planned,
// effect_pending before and during its effect, staged) for a tool of each kind and replay class:
// builtin (safe) and client calls through the engine rig; http and MCP tools (never, safe) through
// the hosted object against the real local webhook and MCP server, calls counted at the server.

matrixFamily("tools", "the tools leaf", (c) => (HOSTED_INTENTS.includes(c.intent) ? runHostedCase(c) : runEngineCase(c)));
