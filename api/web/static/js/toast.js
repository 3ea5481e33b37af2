// Short notices at the bottom of the screen, some with an action (Undo).
import { html, useEffect, useReducer } from "../vendor/preact.js";

const toasts = [];
const listeners = new Set();
let next = 1;

function changed() {
  for (const listener of listeners) listener();
}

export function toast(message, { action = null, error = false, ms = 6000 } = {}) {
  const id = next++;
  toasts.push({ id, message, action, error });
  changed();
  setTimeout(() => dismiss(id), ms);
  return id;
}

export function dismiss(id) {
  const at = toasts.findIndex((t) => t.id === id);
  if (at >= 0) toasts.splice(at, 1);
  changed();
}

export function Toasts() {
  const [, force] = useReducer((n) => n + 1, 0);
  useEffect(() => {
    listeners.add(force);
    return () => listeners.delete(force);
  }, []);
  return html`<div class="toasts" role="status" aria-live="polite">
    ${toasts.map(
      (t) => html`<div key=${t.id} class=${`toast ${t.error ? "toast-error" : ""}`}>
      <span>${t.message}</span>
      ${
        t.action &&
        html`<button type="button" onClick=${() => {
          dismiss(t.id);
          t.action.run();
        }}>
        ${t.action.label}</button>`
      }
      <button type="button" class="icon-button" aria-label="Dismiss" onClick=${() => dismiss(t.id)}>×</button>
    </div>`,
    )}
  </div>`;
}
