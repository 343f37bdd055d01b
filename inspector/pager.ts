import { el } from "./dom.ts";
import { PageCursors } from "./page-cursors.ts";

/**
 * *Newer* / *Older* for a paged list, built once so paging with the keyboard keeps the focus on
 * the button pressed (or moves it to the other one when the pressed one becomes disabled).
 */
export class Pager {
  readonly cursors = new PageCursors();
  readonly nav: HTMLElement;
  private readonly newer: HTMLButtonElement;
  private readonly older: HTMLButtonElement;
  private readonly label = el("span", { class: "muted" });

  /** `buttons`: the names of the previous and the next page's buttons ("Newer", "Older" for a list newest first). */
  constructor(
    ariaLabel: string,
    buttons: readonly [string, string],
    private readonly onTurn: () => void,
  ) {
    this.newer = el("button", { type: "button", on: { click: () => this.turn(-1) } }, buttons[0]);
    this.older = el("button", { type: "button", on: { click: () => this.turn(1) } }, buttons[1]);
    this.nav = el("nav", { class: "pager", "aria-label": ariaLabel }, this.newer, this.label, this.older);
  }

  /**
   * The current page was read: its number, and which buttons apply. Call it only for the latest
   * read (`cursors.ask()` / `cursors.isLatest`): a stale answer would record its next cursor as
   * the current page's.
   */
  shown(nextCursor: string | null): void {
    this.cursors.read(nextCursor);
    this.label.textContent = `Page ${this.cursors.page + 1}`;
    // A focused button that becomes disabled drops the focus: it moves to the other one instead.
    const focused = document.activeElement;
    this.newer.disabled = this.cursors.page === 0;
    this.older.disabled = !this.cursors.hasNext;
    if (focused === this.newer && this.newer.disabled) this.older.focus();
    if (focused === this.older && this.older.disabled) this.newer.focus();
  }

  private turn(by: number): void {
    this.cursors.turn(by);
    this.onTurn();
  }
}
