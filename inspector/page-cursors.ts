/**
 * Where a paged list is: the cursor of each page seen so far, so *Newer* goes back without asking
 * the API for a backwards cursor (its listings page forwards only).
 */
export class PageCursors {
  private cursors: (string | undefined)[] = [undefined];
  private index = 0;
  /** Reads started so far: only the latest one's answer is shown. */
  private asked = 0;

  /** The page shown, from 0. */
  get page(): number {
    return this.index;
  }

  /** The cursor that reads the current page (undefined: the first). */
  get cursor(): string | undefined {
    return this.cursors[this.index];
  }

  /**
   * A read of the current page starts: its cursor and its ticket. Answers can arrive out of order
   * (a slow first page after a fast second one): only the latest read's answer may be shown.
   */
  ask(): { cursor: string | undefined; ticket: number } {
    this.asked += 1;
    return { cursor: this.cursor, ticket: this.asked };
  }

  /** Whether `ticket` is the latest read's (no later read started since). */
  isLatest(ticket: number): boolean {
    return ticket === this.asked;
  }

  /** The current page was read: remember where the next one starts (null: it is the last). */
  read(nextCursor: string | null): void {
    this.cursors[this.index + 1] = nextCursor ?? undefined;
  }

  /** Whether a page follows the current one (known once it was read). */
  get hasNext(): boolean {
    return this.cursors[this.index + 1] !== undefined;
  }

  /** Moves by `by` pages: never before the first, nor past a page not known to exist. */
  turn(by: number): void {
    const target = Math.max(0, this.index + by);
    if (target <= this.index || this.cursors[target] !== undefined) this.index = target;
  }

  /** Back to the first page, forgetting the others (the filter changed). */
  reset(): void {
    this.cursors = [undefined];
    this.index = 0;
  }
}
