/**
 * One request as the local MCP test server (test/node/mcp-test-server.ts) recorded it, as its
 * `GET /calls/{scope}` answers it: shared by the server (Node) and the tests that read it (workerd).
 */
export interface RecordedMcpRequest {
  method: string;
  tool?: string;
  arguments?: unknown;
  /** A `tools/call`'s `_meta`, as sent. */
  meta?: unknown;
  authorization: string | null;
  team: string | null;
  abandoned: boolean;
}
