declare const wireType: unique symbol;

/**
 * JSON text that carries its type. Payloads cross the Worker↔Durable Object RPC boundary as JSON
 * text: the edge can forward a validated body and return the object's reply without re-encoding,
 * and TypeScript's RPC stub types cannot follow recursive JSON types (TS2589).
 */
export type Wire<T> = string & { readonly [wireType]?: T };

export function toWire<T>(value: T): Wire<T> {
  return JSON.stringify(value) as Wire<T>;
}

export function fromWire<T>(wire: Wire<T>): T {
  return JSON.parse(wire);
}
