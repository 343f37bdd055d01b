import { abortRaces } from "./abort-races.ts";
import { acceptanceRaces } from "./acceptance-races.ts";
import { observationRaces } from "./observation-races.ts";
import { structuralRaces } from "./structural-races.ts";
import { toolRaces } from "./tool-races.ts";
import type { RaceEntry } from "./types.ts";

// The race catalog of reference §9.2 (QUALITY R2): every race the engine must survive, each in
// both orders. docs/conformance.md "Race catalog" lists the same entries with their tests.
export const raceCatalog: readonly RaceEntry[] = [...acceptanceRaces, ...abortRaces, ...structuralRaces, ...toolRaces, ...observationRaces];
