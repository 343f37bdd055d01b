import { AgentSessionsClient } from "../client/client.ts";
import { isApiError } from "../client/http.ts";
import type { Entry } from "../schema/entries.ts";
import type { LaneSnapshot } from "../schema/lane.ts";
import { AgentsPanel } from "./agents-panel.ts";
import { describeError, type InspectorContext } from "./context.ts";
import { DataPanel } from "./data-panel.ts";
import { byId, field } from "./dom.ts";
import { EntryPanel } from "./entry-panel.ts";
import { LanePanel } from "./lane-panel.ts";
import { SessionPanel } from "./session-panel.ts";
import { SessionsPanel } from "./sessions-panel.ts";

// The Inspector (docs/inspector.md): a client of this origin's public REST and WebSocket API like
// any other, through the project's own SDK. The tenant key is asked once and kept in this tab's
// sessionStorage; it goes out as the Authorization header and as the watch socket's `bearer.<key>`
// subprotocol (browsers cannot set headers on a WebSocket), never in a URL.

const KEY_STORAGE = "inspector.tenantKey";
/** Tree reads after lane events are gathered into one per this many milliseconds. */
const TREE_REFRESH_MS = 250;

/** What the browser test reads: the page's own fold of the watched lane. */
export interface InspectorHook {
  snapshot(): LaneSnapshot | undefined;
  seq(): number | undefined;
}

declare global {
  interface Window {
    __inspector?: InspectorHook;
  }
}

const statusLine = byId("status", HTMLParagraphElement);

function report(message: string, kind: "info" | "error" = "info"): void {
  statusLine.textContent = message;
  statusLine.dataset.kind = kind;
  statusLine.setAttribute("role", kind === "error" ? "alert" : "status");
}

function start(key: string): void {
  const client = new AgentSessionsClient({ baseUrl: location.origin, key });
  const context: InspectorContext = {
    client,
    report,
    async attempt(what, action) {
      try {
        return await action();
      } catch (error) {
        report(`${what} failed: ${describeError(error)}`, "error");
        return undefined;
      }
    },
  };
  let current: { sessionId: string; lane: string | undefined } | undefined;
  let refresh: ReturnType<typeof setTimeout> | undefined;
  /** Sessions opened so far: an open whose session read ends after a later open goes no further. */
  let opens = 0;

  const entryPanel = new EntryPanel(byId("entry", HTMLElement), context, {
    onLabel: (entryId, label) => sessionPanel.setLabel(entryId, label),
    onForked: (sessionId) => void openSession(sessionId, `Forked into ${sessionId}`),
    onNavigated: () => scheduleTreeRefresh(),
  });
  const dataPanel = new DataPanel(byId("data", HTMLElement), context);
  const lanePanel = new LanePanel(byId("lane", HTMLElement), context, {
    onTreeChange: () => scheduleTreeRefresh(),
    onTip: (tipId) => sessionPanel.setLaneTip(tipId),
  });
  const sessionPanel = new SessionPanel(byId("session", HTMLElement), context, {
    onLane: (lane) => {
      if (!current) return;
      current.lane = lane;
      void lanePanel.open(current.sessionId, lane);
    },
    onEntry: (entry: Entry) => {
      if (current) void entryPanel.show(entry, current);
    },
    onForked: (sessionId) => void openSession(sessionId, `Forked into ${sessionId}`),
    onAgent: (agent) => void agentsPanel.show(agent.id, agent.version),
  });
  const sessionsPanel = new SessionsPanel(byId("sessions", HTMLElement), context, (sessionId) => void openSession(sessionId));
  const agentsPanel = new AgentsPanel(byId("agents", HTMLElement), context, {
    onSessions: (agentId) => {
      void sessionsPanel.filterByAgent(agentId);
      byId("sessions", HTMLElement).scrollIntoView({ block: "nearest" });
    },
  });

  function scheduleTreeRefresh(): void {
    if (refresh !== undefined) return;
    refresh = setTimeout(() => {
      refresh = undefined;
      const target = current;
      if (!target) return;
      sessionsPanel.refreshRow(target.sessionId);
      void sessionPanel.load(target.sessionId).then((state) => state && dataPanel.refreshUsage(target.sessionId, state.entries));
    }, TREE_REFRESH_MS);
  }

  async function openSession(sessionId: string, message?: string): Promise<void> {
    const opening = ++opens;
    lanePanel.close();
    entryPanel.hide();
    sessionsPanel.select(sessionId);
    // From now on a tree refresh reads this session, not the one left (whose late answer the
    // session panel drops).
    current = { sessionId, lane: undefined };
    const root = byId("session", HTMLElement);
    root.hidden = false;
    const state = await sessionPanel.load(sessionId);
    if (!state || opening !== opens) return;
    const lane = sessionPanel.currentLane;
    current.lane = lane;
    if (message) {
      report(message);
      void sessionsPanel.load();
    }
    void dataPanel.show(sessionId, state.entries);
    if (lane !== undefined) await lanePanel.open(sessionId, lane);
    else byId("lane", HTMLElement).hidden = true;
  }

  window.__inspector = { snapshot: () => lanePanel.snapshot(), seq: () => lanePanel.seq() };
  void (async () => {
    const me = await client.me().catch((error: unknown) => {
      // Only a refused key is forgotten: a passing failure (503, 429, the network) keeps it, and
      // a reload tries again.
      const refused = isApiError(error) && (error.status === 401 || error.status === 403);
      report(`Check key failed: ${describeError(error)}${refused ? "" : " (reload to try again)"}`, "error");
      if (refused) {
        sessionStorage.removeItem(KEY_STORAGE);
        showKeyForm();
      }
      return undefined;
    });
    if (!me) return;
    byId("whoami", HTMLElement).textContent = `tenant ${me.tenantId}`;
    byId("sign-out", HTMLButtonElement).hidden = false;
    byId("app", HTMLElement).hidden = false;
    report("Ready");
    await Promise.all([sessionsPanel.load(), agentsPanel.load()]);
  })();
}

function showKeyForm(): void {
  const form = byId("key-form", HTMLFormElement);
  form.hidden = false;
  byId("key-input", HTMLInputElement).focus();
}

byId("key-form", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  const form = byId("key-form", HTMLFormElement);
  const key = field(form, "key").trim();
  if (key === "") return;
  sessionStorage.setItem(KEY_STORAGE, key);
  form.reset();
  form.hidden = true;
  start(key);
});

byId("sign-out", HTMLButtonElement).addEventListener("click", () => {
  sessionStorage.removeItem(KEY_STORAGE);
  location.reload();
});

const stored = sessionStorage.getItem(KEY_STORAGE);
if (stored) start(stored);
else showKeyForm();
