// @ts-check
// What the memory and model-settings panels share: their stylesheet, a modal dialog built on
// the shell's <dialog> (Escape asks the panel), an in-page confirmation (tests can drive it, unlike window.confirm), and error wording.

import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { inputValue } from "../js/util.js";

/** @typedef {import("../vendor/preact.js").ComponentChildren} ComponentChildren */
/** The API as the shell hands it to a panel (static/js/api.js). @typedef {typeof import("../js/api.js").api} Api */

const STYLESHEET = "/static/panels/panels.css";

/** Link panels.css once, when the first panel module loads (CSP: style-src 'self'). */
/**
 * A form's values, starting as `empty`, and `field(name)`: the props that bind an input to
 * one of them (its id is `${prefix}-${name}`). `reset()` empties the form again.
 */
/**
 * @template {Record<string, string>} F
 * @param {F} empty
 * @param {string} prefix
 */
export function useForm(empty, prefix) {
  const [form, setForm] = useState(empty);
  const field = (/** @type {keyof F & string} */ name) => ({
    id: `${prefix}-${name}`,
    name,
    value: form[name],
    onInput: (/** @type {Event} */ e) => setForm({ ...form, [name]: inputValue(e) }),
  });
  return { form, field, reset: () => setForm(empty) };
}

export function ensureStylesheet() {
  if (document.querySelector(`link[href="${STYLESHEET}"]`)) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = STYLESHEET;
  document.head.append(link);
}

/** The message of an API error (an ApiError from the shell's fetch wrapper, or any Error). */
export function messageOf(/** @type {unknown} */ error) {
  if (!error) return "";
  return /** @type {{ message?: string }} */ (error).message || String(error);
}

/**
 * A panel's frame inside the shell's <dialog>: Escape there (the dialog's `cancel` event,
 * which the shell leaves to a loaded panel) and the close button call `onRequestClose`,
 * which decides; the memory panel asks first when edits are unsaved.
 */
/**
 * @param {{ titleId: string, title: ComponentChildren, closeLabel?: string, className?: string,
 *   onRequestClose: () => void, children?: ComponentChildren }} props
 */
export function PanelFrame({ titleId, title, closeLabel, className = "", onRequestClose, children }) {
  const ref = useRef(/** @type {HTMLDivElement | null} */ (null));
  const requestClose = useRef(onRequestClose);
  requestClose.current = onRequestClose;
  useEffect(() => {
    const dialog = ref.current?.closest("dialog");
    if (!dialog) return undefined;
    const onCancel = (/** @type {Event} */ event) => {
      event.preventDefault();
      requestClose.current?.();
    };
    dialog.addEventListener("cancel", onCancel);
    return () => dialog.removeEventListener("cancel", onCancel);
  }, []);
  return html`<div ref=${ref} class=${`pn-frame ${className}`}>
    <header class="pn-header">
      <h2 id=${titleId}>${title}</h2>
      <${CloseButton} onClick=${() => requestClose.current?.()} label=${closeLabel} />
    </header>
    ${children}
  </div>`;
}

/** A modal <dialog> of the panel's own (the confirmation), on top of the shell's dialog. */
/**
 * @param {{ labelledBy: string, describedBy?: string, className?: string, onRequestClose: () => void,
 *   role?: string, children?: ComponentChildren }} props
 */
export function Modal({ labelledBy, describedBy, className = "", onRequestClose, role, children }) {
  const ref = useRef(/** @type {HTMLDialogElement | null} */ (null));
  const requestClose = useRef(onRequestClose);
  requestClose.current = onRequestClose;
  useEffect(() => {
    const dialog = /** @type {HTMLDialogElement} */ (ref.current);
    const opener = /** @type {HTMLElement | null} */ (document.activeElement);
    if (!dialog.open) dialog.showModal();
    const onCancel = (/** @type {Event} */ event) => {
      event.preventDefault();
      event.stopPropagation();
      requestClose.current?.();
    };
    dialog.addEventListener("cancel", onCancel);
    return () => {
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      if (opener && opener.isConnected && typeof opener.focus === "function") opener.focus();
    };
  }, []);
  return html`<dialog
    ref=${ref}
    class=${`pn-modal ${className}`}
    role=${role}
    aria-labelledby=${labelledBy}
    aria-describedby=${describedBy}
  >${children}</dialog>`;
}

/** An in-page yes/no question on top of a panel. */
/**
 * @param {{ title: ComponentChildren, message: ComponentChildren, confirmLabel: string, cancelLabel?: string,
 *   onConfirm: () => void, onCancel: () => void }} props
 */
export function Confirm({ title, message, confirmLabel, cancelLabel = "Cancel", onConfirm, onCancel }) {
  return html`<${Modal}
    className="pn-confirm"
    role="alertdialog"
    labelledBy="pn-confirm-title"
    describedBy="pn-confirm-message"
    onRequestClose=${onCancel}
  >
    <h2 id="pn-confirm-title">${title}</h2>
    <p id="pn-confirm-message">${message}</p>
    <div class="pn-actions">
      <button type="button" class="pn-button" onClick=${onCancel} autofocus>${cancelLabel}</button>
      <button type="button" class="pn-button danger" onClick=${onConfirm}>${confirmLabel}</button>
    </div>
  <//>`;
}

/** The close button at a panel's top right. */
/** @param {{ onClick: () => void, label?: string }} props */
export function CloseButton({ onClick, label = "Close" }) {
  return html`<button type="button" class="pn-close" aria-label=${label} title=${label} onClick=${onClick}>
    <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
      <path d="M6 6l12 12M18 6L6 18" stroke="currentColor" stroke-width="2" stroke-linecap="round" fill="none" />
    </svg>
  </button>`;
}

/** `YYYY/MM/DD HH:mm:ss` in local time, whatever the browser's language. */
export function formatStamp(/** @type {Date} */ date) {
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}/${two(date.getMonth() + 1)}/${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`
  );
}

const UNITS = ["bytes", "KiB", "MiB", "GiB", "TiB"];

// A byte count as people read it: 1.5 MiB, 12 GiB.
export function formatBytes(/** @type {number} */ count) {
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} bytes` : `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}
