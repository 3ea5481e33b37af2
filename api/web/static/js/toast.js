// @ts-check
// Short notices at the bottom of the screen, some with an action (Undo).
import { html, signal } from "../vendor/preact.js";

/**
 * A notice; its action (Undo) a button.
 * @typedef {{ id: number, message: string, action: Action | null, error: boolean }} Toast
 * @typedef {{ label: string, run: () => unknown }} Action
 */

const toasts = signal(/** @type {Toast[]} */ ([]));
let next = 1;

/**
 * Show a notice for `ms` milliseconds; its id.
 * @param {string} message
 * @param {{ action?: Action | null, error?: boolean, ms?: number }} [options]
 */
export function toast(message, { action = null, error = false, ms = 6000 } = {}) {
  const id = next++;
  toasts.value = [...toasts.value, { id, message, action, error }];
  setTimeout(() => dismiss(id), ms);
  return id;
}

export function dismiss(/** @type {number} */ id) {
  toasts.value = toasts.value.filter((t) => t.id !== id);
}

export function Toasts() {
  return html`<div class="toasts" role="status" aria-live="polite">
    ${toasts.value.map(
      (t) => html`<div key=${t.id} class=${`toast ${t.error ? "toast-error" : ""}`}>
      <span>${t.message}</span>
      ${
        t.action &&
        html`<button type="button" onClick=${() => {
          dismiss(t.id);
          t.action?.run();
        }}>
        ${t.action.label}</button>`
      }
      <button type="button" class="icon-button" aria-label="Dismiss" onClick=${() => dismiss(t.id)}>×</button>
    </div>`,
    )}
  </div>`;
}
