// The shape of the peer's storage tally, on its own so the Node bench can read the peer's
// `/tally` answer typed without compiling the workerd-side counting code.

/** Work counted in this isolate: SQL write statements, rows read, key-value puts/deletes, socket messages and alarms. */
export interface StorageTally {
  sqlStatements: number;
  /** SQLite's own rowsWritten over the write statements (index rows included). */
  rowsWritten: number;
  /** Bytes bound into the write statements (UTF-8 text, blob length, 8 per number, 0 for NULL). */
  boundBytes: number;
  /** SQLite's own rowsRead over every statement (counted once its cursor was consumed). */
  rowsRead: number;
  /** Key-value puts and deletes (stored in the same SQLite database, table _cf_KV). */
  kvWrites: number;
  /** UTF-8 bytes of the keys and JSON of the values put. */
  kvBytes: number;
  /** Incoming WebSocket messages the agents handled (`webSocketMessage`), billed 20:1 as requests. */
  socketMessages: number;
  /** Alarm invocations (`alarm`), each one billed Durable Object request. */
  alarms: number;
}
