import type { Api } from "../../test/e2e/client-helpers.ts";

// Our side of the server rows, as an API user drives it: a session with lane `main` on
// `scripted/echo`, and one turn = `POST …/lanes/main/prompt` answering the settled record.

/** What a turn needs of a client: `Api` (Node's fetch) or `KeptAliveApi` (node:http). */
export type TurnApi = Pick<Api, "expect">;

type PromptRecord = { status: string; operationId: string; messages?: { role: string; content: unknown }[] };

export async function echoSession(api: TurnApi, sessionId: string): Promise<void> {
  await api.expect(201, "POST", "/v1/sessions", { body: { id: sessionId } });
  await api.expect(201, "PUT", `/v1/sessions/${sessionId}/lanes/main`, { body: { model: { provider: "scripted", modelId: "echo" } } });
}

/** One turn; fails unless the run completed and its answer echoes the prompt. */
export async function promptTurn(api: TurnApi, sessionId: string, prompt: string): Promise<void> {
  const record = await api.expect<PromptRecord>(200, "POST", `/v1/sessions/${sessionId}/lanes/main/prompt`, { body: { prompt } });
  if (record.status !== "completed") throw new Error(`turn on ${sessionId} ended ${record.status}`);
  const answer = record.messages?.findLast((message) => message.role === "assistant");
  if (!answer || !JSON.stringify(answer.content).includes(JSON.stringify(prompt).slice(1, -1))) {
    throw new Error(`turn on ${sessionId}: the answer does not echo the prompt (${JSON.stringify(answer)?.slice(0, 200)})`);
  }
}
