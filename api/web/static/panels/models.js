// @ts-check
// Model settings, for administrators: the offerings (where a model is served) and which
// offering each task uses. A key is never entered or shown here: an offering names the
// environment variable that holds its key on the server (EONYX_KEY_*), and the panel only
// says whether that variable is set. Credentials inside a base URL are masked on display too.

import { html, useEffect, useState } from "../vendor/preact.js";
import { PanelFrame, ensureStylesheet, messageOf, useForm } from "./common.js";
import { RoleSwitch } from "./switches.js";
import { inputValue } from "../js/util.js";
import { GroupsEditor } from "./groups.js";

ensureStylesheet();

/** @typedef {import("./common.js").Api} Api */
/** @typedef {import("./switches.js").Settings} Settings */
/**
 * An offering as GET /models/offerings lists it.
 * @typedef {object} Offering
 * @property {string} id
 * @property {string} model
 * @property {string} base_url
 * @property {string | null} [api_key_env]
 * @property {boolean} [api_key_set]
 * @property {number | null} [context_window]
 * @property {boolean} [builtin] from the environment
 * @property {string[]} [allowed_groups]
 */
/** @typedef {{ role: string, offering_id: string | null, explicit: boolean }} Role a task role's binding */

const ROLES = [
  ["chat", "Chat", "answers in every chat"],
  ["session_title", "Chat titles", "names new chats"],
  ["user_memory_extraction", "User profile extraction", "keeps the user profile (USER.md) up to date"],
  ["agent_memory_curation", "Agent memory curation", "distils liked turns into the agent memory (MEMORY.md)"],
  ["summarization", "Summarization", "compacts long chats"],
];
const SAME_AS_CHAT = "";

/** `url` without userinfo or query values, as the server masks it for plain users. */
export function maskUrl(/** @type {string} */ url) {
  try {
    const u = new URL(url);
    const auth = u.username || u.password ? "***@" : "";
    const query = u.search
      ? "?" +
        u.search
          .slice(1)
          .split("&")
          .map((p) => (p.includes("=") ? `${p.split("=")[0]}=***` : p))
          .join("&")
      : "";
    return `${u.protocol}//${auth}${u.host}${u.pathname === "/" && !url.endsWith("/") ? "" : u.pathname}${query}`;
  } catch {
    return "***";
  }
}

const EMPTY = { id: "", base_url: "", model: "", api_key_env: "", context_window: "", max_output_tokens: "" };

/** @param {{ api: Api, onAdded: (offering: Offering) => void }} props */
function AddOffering({ api, onAdded }) {
  const { form, field, reset } = useForm(EMPTY, "offering");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    setError("");
    setBusy(true);
    /** @type {Record<string, string | number>} */
    const body = { id: form.id.trim(), base_url: form.base_url.trim(), model: form.model.trim() };
    if (form.api_key_env.trim()) body.api_key_env = form.api_key_env.trim();
    for (const name of /** @type {const} */ (["context_window", "max_output_tokens"])) {
      if (String(form[name]).trim()) body[name] = Number(form[name]);
    }
    try {
      const added = await api.post("/models/offerings", body);
      reset();
      onAdded(added);
    } catch (e) {
      setError(`Not added: ${messageOf(e)}`);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="offering-form" onSubmit=${submit} aria-labelledby="offering-add-title">
    <h3 id="offering-add-title">Add an offering</h3>
    <div class="pn-form-grid">
      <label for="offering-id">Id</label>
      <input ...${field("id")} required maxlength="64" placeholder="gpt-small" autocomplete="off" />
      <label for="offering-base_url">Base URL</label>
      <input ...${field("base_url")} required type="url" placeholder="https://api.example.com/v1" autocomplete="off" />
      <label for="offering-model">Model</label>
      <input ...${field("model")} required placeholder="model name at that URL" autocomplete="off" />
      <label for="offering-api_key_env">Key variable</label>
      <div>
        <input
          ...${field("api_key_env")}
          placeholder="EONYX_KEY_OPENAI"
          autocomplete="off"
          spellcheck="false"
          aria-describedby="offering-key-help"
        />
        <p id="offering-key-help" class="pn-muted">
          The name of the server's environment variable that holds the key (EONYX_KEY_… or
          EONYX_LLM_API_KEY), never the key itself. Set it on every host that runs the API or a worker.
        </p>
      </div>
      <label for="offering-context_window">Context window</label>
      <input ...${field("context_window")} type="number" min="1" inputmode="numeric" placeholder="tokens (optional)" />
      <label for="offering-max_output_tokens">Max output</label>
      <input ...${field("max_output_tokens")} type="number" min="1" inputmode="numeric" placeholder="tokens (optional)" />
    </div>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <div class="pn-actions">
      <button type="submit" class="pn-button primary" disabled=${busy}>Add offering</button>
    </div>
  </form>`;
}

/** @param {{ offerings: Offering[], roles: Role[], onRemove: (offering: Offering) => void }} props */
function Offerings({ offerings, roles, onRemove }) {
  if (offerings.length === 0) return html`<p class="pn-muted">No offerings yet: add one below.</p>`;
  const uses = (/** @type {string} */ id) => roles.filter((r) => r.explicit && r.offering_id === id).map((r) => r.role);
  return html`<table class="offering-table">
    <caption class="pn-sr-only">Offerings</caption>
    <thead><tr><th scope="col">Id</th><th scope="col">Model</th><th scope="col">Base URL</th>
      <th scope="col">Key</th><th scope="col">Context</th><th scope="col"><span class="pn-sr-only">Actions</span></th></tr></thead>
    <tbody>
      ${offerings.map(
        (o) => html`<tr key=${o.id} data-offering=${o.id}>
          <th scope="row">${o.id}${o.builtin ? html` <span class="pn-badge">built-in</span>` : null}</th>
          <td>${o.model}</td>
          <td class="offering-url">${maskUrl(o.base_url)}</td>
          <td>${
            o.api_key_env
              ? html`<code>${o.api_key_env}</code> <span class=${o.api_key_set ? "pn-key-set" : "pn-key-unset"}>${o.api_key_set ? "set" : "not set on this server"}</span>`
              : html`<span class="pn-muted">none</span>`
          }</td>
          <td>${o.context_window ? o.context_window.toLocaleString("en-US") : "—"}</td>
          <td>${
            o.builtin
              ? html`<span class="pn-muted" title="Set by EONYX_LLM_BASE_URL and EONYX_LLM_MODEL">from the environment</span>`
              : html`<button type="button" class="pn-button small danger" aria-label=${`Remove ${o.id}`}
                title=${uses(o.id).length ? `Its tasks (${uses(o.id).join(", ")}) fall back to the chat's model` : undefined}
                onClick=${() => onRemove(o)}>Remove</button>`
          }</td>
        </tr>`,
      )}
    </tbody>
  </table>`;
}

/**
 * @param {{ api: Api, offerings: Offering[], roles: Role[], onChanged: (role: Role) => void,
 *   settings: Settings | null, onSettings: (settings: Settings) => void }} props
 */
function Roles({ api, offerings, roles, onChanged, settings, onSettings }) {
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const assign = async (/** @type {string} */ role, /** @type {string} */ value) => {
    setError("");
    setStatus("");
    try {
      const offering_id = value === SAME_AS_CHAT ? null : value;
      const result = await api.put(`/models/roles/${role}`, { offering_id });
      onChanged(result);
      setStatus(`${role}: ${result.explicit ? result.offering_id : "same as chat"}.`);
    } catch (e) {
      setError(`Not changed: ${messageOf(e)}`);
    }
  };
  const byRole = Object.fromEntries(roles.map((r) => [r.role, r]));
  // The built-in offering (from the environment) is what an unset chat role uses: it is the
  // first option, not one of the others (binding to it is the same as unsetting).
  const hasDefault = offerings.some((o) => o.builtin);
  const choices = offerings.filter((o) => !o.builtin);
  return html`<section aria-labelledby="roles-title">
    <h3 id="roles-title">Task model assignments</h3>
    <div class="pn-form-grid pn-roles-grid">
      ${ROLES.map(([role, label, what]) => {
        const current = byRole[role];
        const selected = current?.explicit ? current.offering_id : SAME_AS_CHAT;
        const fallback = current?.offering_id ? `uses ${current.offering_id}` : "no model configured";
        return html`
          <label for=${`role-${role}`}>${label} <span class="pn-muted">(${role})</span></label>
          <div>
            <select id=${`role-${role}`} name=${role} value=${selected}
              aria-describedby=${`role-${role}-about`}
              onChange=${(/** @type {Event} */ e) => assign(role, inputValue(e))}>
              <option value=${SAME_AS_CHAT}>${role !== "chat" ? "Same as chat" : hasDefault ? "Built-in default" : "Not set"}</option>
              ${choices.map((o) => html`<option key=${o.id} value=${o.id}>${o.id} — ${o.model}</option>`)}
            </select>
            <p class="pn-muted" id=${`role-${role}-about`}>${what}; ${current?.explicit ? `set to ${current.offering_id}` : fallback}</p>
            <${RoleSwitch} api=${api} role=${role} settings=${settings} canChange=${true} onChanged=${onSettings} />
          </div>`;
      })}
    </div>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status" role="status">${status}</p>
  </section>`;
}

/** @param {import("../js/panels.js").PanelProps} props */
export default function ModelSettings({ api, user, onClose }) {
  const [offerings, setOfferings] = useState(/** @type {Offering[] | null} */ (null));
  const [roles, setRoles] = useState(/** @type {Role[]} */ ([]));
  // GET /settings: whether each role's feature is on
  const [settings, setSettings] = useState(/** @type {Settings | null} */ (null));
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");

  const load = async () => {
    try {
      const [o, r] = await Promise.all([api.get("/models/offerings"), api.get("/models/roles")]);
      setOfferings(o);
      setRoles(r);
      api.get("/settings").then(setSettings, () => {});
    } catch (e) {
      setOfferings([]);
      setError(`Could not read the model settings: ${messageOf(e)}`);
    }
  };
  useEffect(() => {
    if (user?.is_admin) load();
  }, []);

  const remove = async (/** @type {Offering} */ offering) => {
    setError("");
    setStatus("");
    try {
      await api.del(`/models/offerings/${encodeURIComponent(offering.id)}`);
      setStatus(`Removed ${offering.id}.`);
      await load();
    } catch (e) {
      setError(`Not removed: ${messageOf(e)}`);
    }
  };

  return html`<${PanelFrame} className="models-panel" titleId="models-title" title="Model settings"
    closeLabel="Close model settings" onRequestClose=${onClose}>
    <div class="pn-body">
      ${
        !user?.is_admin
          ? html`<p class="pn-error" role="alert">Model settings are for administrators.</p>`
          : offerings === null
            ? html`<p class="pn-muted" role="status">Loading…</p>`
            : html`
            <section aria-labelledby="offerings-title">
              <h3 id="offerings-title">Offerings</h3>
              <${Offerings} offerings=${offerings} roles=${roles} onRemove=${remove} />
              ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
              <p class="pn-status" role="status">${status}</p>
            </section>
            <${Roles} api=${api} offerings=${offerings} roles=${roles} settings=${settings} onSettings=${setSettings}
              onChanged=${() => api.get("/models/roles").then(setRoles, () => {})} />
            <${AddOffering} api=${api} onAdded=${(/** @type {Offering} */ o) => {
              setStatus(`Added ${o.id}.`);
              load();
            }} />
            <${GroupsEditor} api=${api} offerings=${offerings} onChanged=${load} />`
      }
    </div>
  <//>`;
}
