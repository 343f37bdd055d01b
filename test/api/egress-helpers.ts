import { expect, inject } from "vitest";
import "../provided-context.ts";
import type { TripwireLog } from "../node/egress-fixtures.ts";

// The egress tests' loopback servers (test/node/egress-fixtures.ts), as the workerd tests see them.

export const tripwireUrl = (): string => inject("egressTripwireUrl");
export const fixturesUrl = (): string => inject("egressFixturesUrl");
export const closedUrl = (): string => inject("egressClosedUrl");

/** The tripwire's port: refused URLs are written in every form, all pointing at it. */
export const tripwirePort = (): string => new URL(tripwireUrl()).port;

/** What the tripwire saw (asked of the fixtures server, so that asking makes no connection to it). */
export async function tripwireLog(): Promise<TripwireLog> {
  return (await fetch(`${fixturesUrl()}/tripwire`)).json<TripwireLog>();
}

/** Nothing ever reached the tripwire: no connection, no request. */
export async function expectTripwireUntouched(): Promise<void> {
  expect(await tripwireLog()).toEqual({ connections: 0, requests: [] });
}
