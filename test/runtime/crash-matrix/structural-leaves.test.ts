import { runEngineCase } from "./driver.ts";
import { matrixFamily } from "./tally.ts";

// Crash matrix, structural family (QUALITY R1): summary.deciding, summary.ready,
// summary.effect_pending, summary.retry_wait, navigation.ready_to_commit, for manual/threshold/overflow
// compaction and plain/summarized navigation.

matrixFamily("structural", "summary and navigation leaves", runEngineCase);
