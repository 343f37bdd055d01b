import type { AssistantMessage as ProviderAssistant } from "@earendil-works/pi-ai";
import type { HarnessEvent } from "../../schema/lane.ts";
import type { AssistantMessage } from "../../schema/messages.ts";
import { pendingCopy } from "./drive/assistant/response.ts";

/**
 * The response a lane's live pass is streaming (snapshot precedence, reference §5.3): the
 * provider's partial by reference — it grows in place and is copied only when a snapshot is taken —
 * and the update its watchers have not been sent yet. The settlement commit takes it away.
 */
export class LiveResponse {
  private current: { partial: ProviderAssistant; pendingUpdate: () => HarnessEvent | undefined } | undefined;

  set(partial: ProviderAssistant, pendingUpdate: () => HarnessEvent | undefined): void {
    this.current = { partial, pendingUpdate };
  }

  /** Clears the live response (on the line, by its settlement); returns the partial that was set. */
  take(): ProviderAssistant | undefined {
    const partial = this.current?.partial;
    this.current = undefined;
    return partial;
  }

  /**
   * A frozen copy of the partial for a snapshot taken inside a mutation. The update not yet sent
   * goes out first (`emit` binds it before the capture), so that the deltas after the capture
   * apply on top of exactly the partial the snapshot holds.
   */
  capture(emit: (event: HarnessEvent) => void): AssistantMessage | undefined {
    if (!this.current) return undefined;
    const pending = this.current.pendingUpdate();
    if (pending) emit(pending);
    return pendingCopy(this.current.partial);
  }
}
