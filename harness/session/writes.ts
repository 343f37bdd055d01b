import type { NewEntry } from "../../schema/entries.ts";
import type { Value, ValueList } from "./addresses.ts";
import type { NewUsageRow, Write } from "./storage.ts";

// Typed constructors for the six write kinds (reference §1.5). `NoInfer` makes the address's type
// authoritative: the value must fit the address, never the other way round.

export const insertEntry = (entry: NewEntry): Write => ({ kind: "entry", entry });

export const insertUsage = (row: NewUsageRow): Write => ({ kind: "usage", row });

export function setValue<T>(address: Value<T>, next: NoInfer<T>): Write {
  if (address.kind !== "value") throw new TypeError("setValue needs a value address");
  return { kind: "value", op: "set", namespace: address.namespace, key: address.key, value: next };
}

export function deleteValue<T>(address: Value<T>): Write {
  if (address.kind !== "value") throw new TypeError("deleteValue needs a value address");
  return { kind: "value", op: "delete", namespace: address.namespace, key: address.key };
}

export function appendList<T>(address: ValueList<T>, element: NoInfer<T>): Write {
  if (address.kind !== "list") throw new TypeError("appendList needs a list address");
  return { kind: "list", op: "append", namespace: address.namespace, key: address.key, value: element };
}

export function deleteList<T>(address: ValueList<T>): Write {
  if (address.kind !== "list") throw new TypeError("deleteList needs a list address");
  return { kind: "list", op: "delete", namespace: address.namespace, key: address.key };
}
