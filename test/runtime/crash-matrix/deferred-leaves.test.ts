import { runEngineCase } from "./driver.ts";
import { matrixFamily } from "./tally.ts";

// Crash matrix, deferred family (QUALITY R1): deferred.suspended and deferred.effect_pending, for
// the deferred (provider-async) run.

matrixFamily("deferred", "deferred leaves", runEngineCase);
