// @ts-check
// The model picker in the chat's header: the offerings the server lets this user use
// (GET /models/offerings leaves out those kept for groups the user is in none of), and the
// one chosen for the next turns (sent as the turn's `offering`; "" is the chat role's own).
// The choice is remembered in this browser; one the server no longer offers is dropped.
import { html, signal, useEffect } from "../vendor/preact.js";
import { api } from "./api.js";

const KEPT = "eonyx.model";

/** The offering id chosen for the next turns; "" for the deployment's chat model. */
export const chosenModel = signal(localStorage.getItem(KEPT) || "");
/** The offerings this user may use, once read. */
export const offered = signal(/** @type {any[] | null} */ (null));

function choose(/** @type {string} */ id) {
  chosenModel.value = id;
  if (id) localStorage.setItem(KEPT, id);
  else localStorage.removeItem(KEPT);
}

export async function loadOffered() {
  try {
    const list = await api.get("/models/offerings");
    offered.value = list;
    if (chosenModel.peek() && !list.some((/** @type {any} */ o) => o.id === chosenModel.peek())) choose("");
  } catch {
    offered.value = [];
  }
}

export function ModelPicker() {
  useEffect(() => {
    if (offered.peek() === null) loadOffered();
  }, []);
  const list = offered.value;
  if (!list || list.length < 2) return null; // nothing to choose between
  return html`<select class="model-picker" aria-label="Model" title="The model that answers your next messages"
    value=${chosenModel.value} onChange=${(/** @type {any} */ e) => choose(e.currentTarget.value)}>
    <option value="">Default model</option>
    ${list.map((/** @type {any} */ o) => html`<option key=${o.id} value=${o.id}>${o.id}</option>`)}
  </select>`;
}
