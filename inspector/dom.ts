// A few DOM helpers: the page builds its panels from plain elements (no framework).

type Child = Node | string | number | null | undefined | false;
type AttributeValue = string | number | boolean | undefined | null;
type Listeners = Partial<Record<string, (event: Event) => void>>;
/** Attributes by name, and `on`: listeners by event type. */
export type Attributes = { on?: Listeners; [name: string]: AttributeValue | Listeners };

/** An element with attributes (a `false`/`null`/`undefined` value leaves one out), listeners and children. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "on" || value === false || value === null || value === undefined || typeof value === "object") continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const [type, listener] of Object.entries(attributes.on ?? {})) if (listener) element.addEventListener(type, listener);
  append(element, children);
  return element;
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces the children of `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

const SVG = "http://www.w3.org/2000/svg";

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number> = {}, ...children: (Node | string)[]): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  for (const child of children) element.append(child);
  return element;
}

export function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`The page lacks #${id}`);
  return element;
}

export const time = (ms: number | null | undefined): string => (ms === null || ms === undefined ? "—" : new Date(ms).toLocaleString());
export const dollars = (amount: number): string => `$${amount.toFixed(amount > 0 && amount < 0.01 ? 5 : 2)}`;
export const json = (value: unknown): string => JSON.stringify(value, null, 2);

/** A `<pre>` of a JSON value, for an entry's or a value's full content. */
export const jsonBlock = (value: unknown): HTMLPreElement => el("pre", { class: "json", tabindex: 0 }, json(value));

/** Reads a form's named text field. */
export function field(form: HTMLFormElement, name: string): string {
  const value = new FormData(form).get(name);
  return typeof value === "string" ? value : "";
}
