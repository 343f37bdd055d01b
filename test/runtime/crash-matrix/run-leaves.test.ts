import { runEngineCase } from "./driver.ts";
import { matrixFamily } from "./tally.ts";

// Crash matrix, run family (QUALITY R1): starting, checkpoint, assistant.ready,
// assistant.effect_pending, assistant.retry_wait, for every run intent that reaches them.

matrixFamily("run", "run leaves", runEngineCase);
