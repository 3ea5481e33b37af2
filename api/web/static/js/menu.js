// A button that opens a menu of actions (the chat's and the folder's 3-dot menus).
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { Icon } from "./icons.js";

/** items: [{label, run, danger?, items?: [...] (a submenu), disabled?}], or a function giving
 * them when the menu opens (so a row need not re-render when, say, the folders change). */
export function Menu({ label, items, icon = "dots", className = "" }) {
  const [open, setOpen] = useState(false);
  const [sub, setSub] = useState(null);
  const root = useRef(null);
  const button = useRef(null);

  useEffect(() => {
    if (!open) return;
    const outside = (event) => root.current && !root.current.contains(event.target) && close();
    document.addEventListener("pointerdown", outside);
    root.current?.querySelector("[role=menuitem]")?.focus();
    return () => document.removeEventListener("pointerdown", outside);
  }, [open, sub]);

  function close(focus = false) {
    setOpen(false);
    setSub(null);
    if (focus) button.current?.focus();
  }

  function keydown(event) {
    const entries = [...root.current.querySelectorAll("[role=menuitem]")];
    const at = entries.indexOf(document.activeElement);
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

  function choose(item, event) {
    event.stopPropagation();
    if (item.items) return setSub(item);
    close(true);
    item.run();
  }

  const shown = sub ? sub.items : open ? (typeof items === "function" ? items() : items) : [];
  return html`<div class=${`menu ${className}${open ? " open" : ""}`} ref=${root} onKeyDown=${open && keydown}>
    <button ref=${button} type="button" class="icon-button menu-button" aria-label=${label}
      aria-haspopup="menu" aria-expanded=${open ? "true" : "false"}
      onClick=${(e) => {
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
        onClick=${(e) => {
          e.stopPropagation();
          setSub(null);
        }}>‹ ${sub.label}</button>`
      }
      ${shown.map(
        (item) => html`<button type="button" role="menuitem" disabled=${item.disabled}
        class=${item.danger ? "danger" : ""} onClick=${(e) => choose(item, e)}>
        ${item.swatch && html`<span class="swatch" style=${{ background: item.swatch }}></span>`}
        ${item.label}${item.items ? " ›" : ""}</button>`,
      )}
    </div>`
    }
  </div>`;
}
