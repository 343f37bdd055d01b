import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithToolCalls, type DynamicToolUIPart, type ToolUIPart, type UIMessage } from "ai";
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

// A chat page on one lane, with the AI SDK's own useChat and DefaultChatTransport (README.md).
// Everything it needs comes from its address, ?base=…&session=…&lane=…&token=…, and the token is a
// browser token your backend minted for this session: the page never holds a tenant key.
const query = new URLSearchParams(location.search);
const base = query.get("base") ?? "http://127.0.0.1:8787";
const session = query.get("session") ?? "";
const lane = query.get("lane") ?? "main";
const headers = { Authorization: `Bearer ${query.get("token") ?? ""}` };
const laneUrl = `${base}/v1/sessions/${encodeURIComponent(session)}/lanes/${encodeURIComponent(lane)}`;
const api = `${laneUrl}/ai-sdk`;
const transport = new DefaultChatTransport({ api, headers });

/** The tool the page itself answers (the session defines it with `kind: "client"`). */
const CLIENT_TOOL = "get_location";

function App() {
  // The lane keeps the conversation; the page starts from it, also after a reload.
  const [initial, setInitial] = useState<UIMessage[] | Error>();
  useEffect(() => {
    fetch(`${api}/messages`, { headers })
      .then(async (response): Promise<UIMessage[]> => {
        if (!response.ok) throw new Error(`GET messages: ${response.status} ${await response.text()}`);
        return response.json();
      })
      .then(setInitial, setInitial);
  }, []);
  if (initial === undefined) return <p>Loading…</p>;
  if (initial instanceof Error) return <p id="error" role="alert">{initial.message}</p>;
  return <Chat initialMessages={initial} />;
}

function Chat({ initialMessages }: { initialMessages: UIMessage[] }) {
  const [input, setInput] = useState("");
  const { messages, sendMessage, addToolOutput, stop, status, error } = useChat({
    // The resumption route is {api}/{chat id}/stream, and its chat id is the session id.
    id: session,
    messages: initialMessages,
    transport,
    // Reattaches to an answer still running (after a reload, say): it replays from its start.
    resume: true,
    onToolCall({ toolCall }) {
      // Other tools are run by the service; their results arrive in the stream.
      if (toolCall.toolName !== CLIENT_TOOL) return;
      void addToolOutput({ tool: CLIENT_TOOL, toolCallId: toolCall.toolCallId, output: { city: "Lisbon", country: "Portugal" } });
    },
    // Posts the client tool's result back; the service hands it to the waiting run, which goes on.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
  });
  const busy = status === "submitted" || status === "streaming";
  const stopAnswer = () => {
    // stop() only stops this page reading; the run is the lane's, so the lane is asked to abort it.
    void fetch(`${laneUrl}/abort`, { method: "POST", headers });
    void stop();
  };
  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} className="message" data-role={message.role}>
            {message.parts.map((part, index) => {
              if (part.type === "text") return <p key={index} className="text">{part.text}</p>;
              if (isToolUIPart(part)) return <ToolCall key={part.toolCallId} part={part} />;
              return null;
            })}
          </li>
        ))}
      </ol>
      <p id="status" data-status={status}>{status}</p>
      {error && <p id="error" role="alert">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (input.trim() === "") return;
          void sendMessage({ text: input });
          setInput("");
        }}
      >
        <input aria-label="Message" value={input} onChange={(event) => setInput(event.target.value)} placeholder="Say something" />
        <button type="submit" disabled={busy}>Send</button>
        <button type="button" onClick={stopAnswer} disabled={!busy}>Stop</button>
      </form>
    </main>
  );
}

function ToolCall({ part }: { part: ToolUIPart | DynamicToolUIPart }) {
  return (
    <div className="tool" data-tool={getToolName(part)} data-state={part.state}>
      <code>
        {getToolName(part)}({JSON.stringify(part.input)})
      </code>
      {part.state === "output-available" && <pre className="output">{JSON.stringify(part.output)}</pre>}
      {part.state === "output-error" && <pre className="output-error">{part.errorText}</pre>}
    </div>
  );
}

const root = document.getElementById("root");
if (root) createRoot(root).render(<App />);
