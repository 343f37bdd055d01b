// The client SDK (ARCHITECTURE §2): typed REST calls and watchLane() with reconnect + fold.
// Imports only schema/; the package build (tsconfig.build.json) emits those schema modules beside it.

export { AgentSessionsClient, createClient, type ClientOptions } from "./client.ts";
export {
  ApiRequestError,
  HttpClient,
  isApiError,
  toResult,
  type CallOptions,
  type FetchLike,
  type HttpClientOptions,
  type HttpResponse,
  type RequestSpec,
  type Result,
} from "./http.ts";
export { AdminApi } from "./admin.ts";
export { AgentsApi, type Agent, type AgentDefinition, type CreateAgent, type PatchAgent } from "./agents.ts";
export { TenantMcpServersApi, TenantToolsApi, type TenantMcpServerReply, type TenantMcpServerView, type TenantToolInput, type TenantToolReply, type TenantToolView } from "./tenant-tools.ts";
export { EntriesApi, SessionsApi, type BrowserToken, type CreateBrowserToken, type DeleteSessionsAnswer, type TenantDetail } from "./sessions.ts";
export { DataApi, type CreatedImport, type ExportLine, type ImportPartAnswer, type LinesBody } from "./data.ts";
export { BranchesApi, ListsApi, ValuesApi } from "./session-data.ts";
export { LanesApi, QueueApi } from "./lanes.ts";
export { OperationsApi, type CompactOptions, type CompactOutcome, type PromptOptions, type WaitOptions } from "./operations.ts";
export { ResourcesApi } from "./resources.ts";
export { ProvidersApi, ToolsApi, type ClientToolResult, type ProviderKeyInfo, type PutProvider, type ToolCallContext, type ToolDefinitionInput, type ToolDefinitionReply, type ToolDefinitionView } from "./tools.ts";
export {
  WebhooksApi,
  type CreatedWebhook,
  type CreateWebhook,
  type PatchWebhook,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEvent,
  type WebhookEventType,
} from "./webhooks.ts";
export { SchedulesApi, type CreateSchedule, type ListedSchedule, type PatchSchedule, type Schedule, type ScheduleRun, type ScheduleSkipReason } from "./schedules.ts";
export { McpServersApi, type McpServerInput, type McpServerReply, type McpServerSummary, type McpServerView, type ToolListing } from "./mcp-servers.ts";
export { pages, paginate } from "./paging.ts";
export {
  bearerProtocol,
  laneWatchUrl,
  watchLane,
  WatchError,
  type BackoffOptions,
  type GapRule,
  type LaneWatch,
  type LaneWatchListener,
  type LaneWatchUpdate,
  type OlderEntriesOptions,
  type ResnapshotReason,
  type SnapshotReason,
  type WatchLaneOptions,
  type WatchSocket,
  type WatchSocketConstructor,
  type WatchStatus,
} from "./watch.ts";
export type * from "./types.ts";

// The wire types the SDK's answers are made of, and the shared fold.
export type { Entry, EntryType } from "../schema/entries.ts";
export type { ApiError, ErrorCode } from "../schema/errors.ts";
export type { JsonValue } from "../schema/json.ts";
export type {
  CurrentOperationInfo,
  HarnessEvent,
  LaneConfiguration,
  LaneEvent,
  LaneExecutionInfo,
  LaneInfo,
  LaneQueuedItem,
  LaneSnapshot,
  OperationResultRecord,
  SnapshotOperation,
} from "../schema/lane.ts";
export type { UiMessage, UiPart } from "../schema/ai-sdk.ts";
export type { AgentMessage, AssistantMessage, ImageContent, UserMessage } from "../schema/messages.ts";
export type { HarnessSettings, PromptTemplate, Skill } from "../schema/settings.ts";
export type { HarnessSettingsPatch } from "../schema/settings-patch.ts";
export type { SessionStats, Usage, UsageRow } from "../schema/usage.ts";
export type { LaneWatchMessage } from "../schema/watch.ts";
export { isRebase, reduceLaneSnapshot, type LaneRebase } from "../schema/reduce-lane-snapshot.ts";
