import type { RaceResult } from "./rig.ts";

// One entry of the race catalog (reference §9.2, QUALITY R2): a race between two contenders, both
// orders of it, and for each order what must come out. An order is either run here (`run`, whose
// observed outcome must equal `outcome`, with no invariant violation after it) or proven by an
// existing test (`coveredBy`, whose file and title the catalog test checks still exist).

/** An existing test that proves one order: a file under test/ and the title as written there. */
export interface CoveredBy {
  file: string;
  title: string;
}

interface OrderBase {
  /** Which contender reaches the line first, in words. */
  label: string;
  /** The expected outcome, in words (docs/conformance.md quotes it). */
  expected: string;
}

export interface RunOrder<T = unknown> extends OrderBase {
  run: () => Promise<RaceResult<T>>;
  outcome: T;
}

export interface CoveredOrder extends OrderBase {
  coveredBy: CoveredBy;
}

export type RaceOrder = RunOrder | CoveredOrder;

export interface RaceEntry {
  /** The race's name as reference §9.2 lists it. */
  name: string;
  orders: readonly [RaceOrder, RaceOrder];
}

/** One order run here: `outcome` is what `run` must observe. */
export function ran<T>(label: string, expected: string, run: () => Promise<RaceResult<T>>, outcome: T): RunOrder {
  return { label, expected, run, outcome };
}

/** One order proven by an existing test. */
export function covered(label: string, expected: string, file: string, title: string): CoveredOrder {
  return { label, expected, coveredBy: { file, title } };
}
