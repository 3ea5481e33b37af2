// @ts-check
// A button that opens a menu of actions (the chat's and the folder's 3-dot menus).
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { Icon } from "./icons.js";

/** The menu's entries: buttons with that role (a cast, since no tag names them). */
const MENU_ITEM = /** @type {"button"} */ ("[role=menuitem]");

/**
 * An entry of a menu: an action, or a submenu (`items`).
 * @typedef {object} MenuItem
 * @property {string} label
 * @property {() => unknown} [run]
 * @property {MenuItem[]} [items] a submenu
 * @property {boolean} [danger]
 * @property {boolean} [disabled]
 * @property {string} [swatch] a folder's colour
 */

/**
 * `items`, or a function giving them when the menu opens (so a row need not re-render when,
 * say, the folders change).
 * @param {{ label: string, items: MenuItem[] | (() => MenuItem[]), icon?: import("./icons.js").IconName, className?: string }} props
 */
export function Menu({ label, items, icon = "dots", className = "" }) {
  const [open, setOpen] = useState(false);
  const [sub, setSub] = useState(/** @type {MenuItem | null} */ (null));
  const root = useRef(/** @type {HTMLDivElement | null} */ (null));
  const button = useRef(/** @type {HTMLButtonElement | null} */ (null));

  useEffect(() => {
    if (!open) return;
    const outside = (/** @type {PointerEvent} */ event) =>
      root.current && !root.current.contains(/** @type {Node} */ (event.target)) && close();
    document.addEventListener("pointerdown", outside);
    root.current?.querySelector(MENU_ITEM)?.focus();
    return () => document.removeEventListener("pointerdown", outside);
  }, [open, sub]);

  function close(focus = false) {
    setOpen(false);
    setSub(null);
    if (focus) button.current?.focus();
  }

  function keydown(/** @type {KeyboardEvent} */ event) {
    const entries = [.../** @type {HTMLDivElement} */ (root.current).querySelectorAll(MENU_ITEM)];
    const at = entries.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      if (sub) setSub(null);
      else close(true);
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      entries[(at + step + entries.length) % entries.length]?.focus();
    }
  }

  function choose(/** @type {MenuItem} */ item, /** @type {Event} */ event) {
    event.stopPropagation();
    if (item.items) return setSub(item);
    close(true);
    item.run?.();
  }

  const shown = sub ? sub.items || [] : open ? (typeof items === "function" ? items() : items) : [];
  return html`<div class=${`menu ${className}${open ? " open" : ""}`} ref=${root} onKeyDown=${open && keydown}>
    <button ref=${button} type="button" class="icon-button menu-button" aria-label=${label}
      aria-haspopup="menu" aria-expanded=${open ? "true" : "false"}
      onClick=${(/** @type {Event} */ e) => {
        e.stopPropagation();
        open ? close() : setOpen(true);
      }}>
      <${Icon} name=${icon} /></button>
    ${
      open &&
      html`<div class="menu-list" role="menu" aria-label=${sub ? sub.label : label}>
      ${
        sub &&
        html`<button type="button" role="menuitem" class="menu-back"
        onClick=${(/** @type {Event} */ e) => {
          e.stopPropagation();
          setSub(null);
        }}>‹ ${sub.label}</button>`
      }
      ${shown.map(
        (/** @type {MenuItem} */ item) => html`<button type="button" role="menuitem" disabled=${item.disabled}
        class=${item.danger ? "danger" : ""} onClick=${(/** @type {Event} */ e) => choose(item, e)}>
        ${item.swatch && html`<span class="swatch" style=${{ background: item.swatch }}></span>`}
        ${item.label}${item.items ? " ›" : ""}</button>`,
      )}
    </div>`
    }
  </div>`;
}
