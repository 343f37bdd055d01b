import { describe, expect, it } from "vitest";
import { PageCursors } from "../../inspector/page-cursors.ts";

// The Inspector's pager bookkeeping: the API pages forwards only, so the page remembers each cursor.

describe("PageCursors", () => {
  it("remembers each page's cursor, goes back without asking for one, and stops at the ends", () => {
    const pages = new PageCursors();
    expect([pages.page, pages.cursor, pages.hasNext]).toEqual([0, undefined, false]);
    pages.read("c1");
    expect(pages.hasNext).toBe(true);
    pages.turn(1);
    expect([pages.page, pages.cursor]).toEqual([1, "c1"]);
    pages.read("c2");
    pages.turn(1);
    pages.read(null);
    expect([pages.page, pages.cursor, pages.hasNext]).toEqual([2, "c2", false]);
    pages.turn(1);
    expect(pages.page).toBe(2);
    pages.turn(-1);
    expect([pages.page, pages.cursor, pages.hasNext]).toEqual([1, "c1", true]);
    pages.turn(-5);
    expect([pages.page, pages.cursor]).toEqual([0, undefined]);
  });

  it("starts again from the first page when the filter changes", () => {
    const pages = new PageCursors();
    pages.read("c1");
    pages.turn(1);
    pages.read("c2");
    pages.reset();
    expect([pages.page, pages.cursor, pages.hasNext]).toEqual([0, undefined, false]);
    pages.turn(1);
    expect(pages.page).toBe(0);
  });

  it("accepts only the latest read's answer, so a late answer of another page is not shown", () => {
    const pages = new PageCursors();
    pages.read("c1");
    pages.turn(1);
    pages.read("c2");
    // Newer (page 1, slow), then Older again (page 2, fast): the first read's answer comes last.
    pages.turn(-1);
    const first = pages.ask();
    pages.turn(1);
    const second = pages.ask();
    expect([first.cursor, second.cursor]).toEqual([undefined, "c1"]);
    expect([pages.isLatest(second.ticket), pages.isLatest(first.ticket)]).toEqual([true, false]);
    // Page 2's next cursor stays the one its own read found.
    expect([pages.page, pages.hasNext]).toEqual([1, true]);
  });
});
