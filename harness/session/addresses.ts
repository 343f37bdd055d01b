/**
 * A bound, typed location in the session's value/list store (reference §1.4). `T` is a phantom:
 * every read and write takes only the address, so the address's type is authoritative.
 */
export interface Value<T> {
  readonly kind: "value";
  readonly namespace: string;
  readonly key: string;
  /** Phantom marker; never present at run time. Invariant in T. */
  readonly __type?: (input: T) => T;
}
export interface ValueList<T> {
  readonly kind: "list";
  readonly namespace: string;
  readonly key: string;
  readonly __type?: (input: T) => T;
}
export type Address = Value<unknown> | ValueList<unknown>;

export class InvalidAddress extends Error {
  override readonly name = "InvalidAddress";
}

function check(namespace: string, key: string): void {
  if (typeof namespace !== "string" || namespace.length === 0) {
    throw new InvalidAddress("An address namespace must be a non-empty string");
  }
  if (typeof key !== "string") throw new InvalidAddress("An address key must be a string");
  if (namespace.includes("\u0000") || key.includes("\u0000")) {
    throw new InvalidAddress("An address may not contain \\u0000");
  }
}

export function value<T>(namespace: string, key = ""): Value<T> {
  check(namespace, key);
  return Object.freeze({ kind: "value", namespace, key });
}

export function list<T>(namespace: string, key = ""): ValueList<T> {
  check(namespace, key);
  return Object.freeze({ kind: "list", namespace, key });
}

/** `pi` and `pi.*` belong to the runtime; applications use their own namespaces. */
export function isReservedNamespace(namespace: string): boolean {
  return namespace === "pi" || namespace.startsWith("pi.");
}

export function sameAddress(a: Address, b: Address): boolean {
  return a.kind === b.kind && a.namespace === b.namespace && a.key === b.key;
}

