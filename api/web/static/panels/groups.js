// @ts-check
// Groups and model access, in Model settings (administrators): make, rename and delete
// groups, choose their members, and per offering the groups that may use it (none ticked:
// everyone). Administrators may always use every offering. An OpenID provider's `groups`
// claim fills groups of the same name at each sign-in (the server does it).

import { html, useEffect, useState } from "../vendor/preact.js";
import { messageOf } from "./common.js";
import { onValue } from "../js/util.js";

/** @typedef {import("./common.js").Api} Api */
/** @typedef {import("./models.js").Offering} Offering */
/** @typedef {{ id: string, username: string }} Person */
/** @typedef {{ id: string, name: string, members: Person[] }} Group */
/**
 * What a group's row or an offering's access says upward.
 * @typedef {{ onChanged: () => void, onStatus: (status: string) => void, onError: (error: string) => void }} Reports
 */

/** Whether two lists of ids hold the same ids. */
function same(/** @type {string[]} */ a, /** @type {string[]} */ b) {
  return a.length === b.length && a.every((x) => b.includes(x));
}

/**
 * @param {{ legend: string, items: { id: string, label: string }[], chosen: string[],
 *   onToggle: (id: string) => void, name: string }} props
 */
function Ticks({ legend, items, chosen, onToggle, name }) {
  return html`<fieldset class="group-ticks">
    <legend class="pn-sr-only">${legend}</legend>
    ${items.map(
      (item) => html`<label class="group-check" key=${item.id}>
        <input type="checkbox" name=${name} value=${item.id} checked=${chosen.includes(item.id)}
          onChange=${() => onToggle(item.id)} /> ${item.label}</label>`,
    )}
  </fieldset>`;
}

function toggled(/** @type {string[]} */ list, /** @type {string} */ id) {
  return list.includes(id) ? list.filter((x) => x !== id) : [...list, id];
}

/** @param {{ api: Api, group: Group, users: Person[] } & Reports} props */
function GroupRow({ api, group, users, onChanged, onStatus, onError }) {
  const kept = group.members.map((m) => m.id);
  const [members, setMembers] = useState(kept);
  const [name, setName] = useState(group.name);
  // Reset to the server's list when it changes, not on every reload that brings the same.
  useEffect(() => setMembers(kept), [kept.join(",")]);
  useEffect(() => setName(group.name), [group.name]);
  const run = async (/** @type {string} */ what, /** @type {() => Promise<unknown>} */ call) => {
    onError("");
    try {
      await call();
      onStatus(what);
      onChanged();
    } catch (e) {
      onError(`Not changed: ${messageOf(e)}`);
    }
  };
  const path = `/groups/${group.id}`;
  return html`<li class="group-item" data-group=${group.name}>
    <div class="group-head">
      <input class="group-name" aria-label=${`Name of ${group.name}`} value=${name} maxlength="64"
        onInput=${onValue(setName)} />
      ${
        name.trim() && name.trim() !== group.name
          ? html`<button type="button" class="pn-button small"
            onClick=${() => run(`Renamed ${group.name} to ${name.trim()}.`, () => api.patch(path, { name: name.trim() }))}>Rename</button>`
          : null
      }
      <button type="button" class="pn-button small danger" aria-label=${`Delete ${group.name}`}
        onClick=${() => run(`Deleted ${group.name}.`, () => api.del(path))}>Delete</button>
    </div>
    <${Ticks} legend=${`Members of ${group.name}`} name=${`members-${group.id}`}
      items=${users.map((u) => ({ id: u.id, label: u.username }))} chosen=${members}
      onToggle=${(/** @type {string} */ id) => setMembers((now) => toggled(now, id))} />
    ${
      same(members, kept)
        ? null
        : html`<button type="button" class="pn-button small primary"
          onClick=${() => run(`Saved the members of ${group.name}.`, () => api.put(`${path}/members`, { user_ids: members }))}>
          Save members of ${group.name}</button>`
    }
  </li>`;
}

/** @param {{ api: Api, offering: Offering, groups: Group[] } & Reports} props */
function OfferingAccess({ api, offering, groups, onStatus, onError, onChanged }) {
  const kept = offering.allowed_groups || [];
  const [allowed, setAllowed] = useState(kept);
  useEffect(() => setAllowed(kept), [kept.join(",")]);
  const save = async () => {
    onError("");
    try {
      await api.patch(`/models/offerings/${encodeURIComponent(offering.id)}`, { allowed_groups: allowed });
      onStatus(allowed.length ? `${offering.id} is kept for its groups.` : `${offering.id} is everyone's.`);
      onChanged();
    } catch (e) {
      onError(`Not changed: ${messageOf(e)}`);
    }
  };
  return html`<li class="access-item" data-offering-access=${offering.id}>
    <strong>${offering.id}</strong>
    <span class="pn-muted"> — ${allowed.length ? "only these groups (and administrators)" : "everyone"}</span>
    <${Ticks} legend=${`Groups that may use ${offering.id}`} name=${`access-${offering.id}`}
      items=${groups.map((g) => ({ id: g.id, label: g.name }))} chosen=${allowed}
      onToggle=${(/** @type {string} */ id) => setAllowed((now) => toggled(now, id))} />
    ${
      same(allowed, kept)
        ? null
        : html`<button type="button" class="pn-button small primary" onClick=${save}>Save who may use ${offering.id}</button>`
    }
  </li>`;
}

/** The groups editor and who may use each offering; `onChanged` reloads the offerings. */
/** @param {{ api: Api, offerings: Offering[], onChanged: () => void }} props */
export function GroupsEditor({ api, offerings, onChanged }) {
  const [groups, setGroups] = useState(/** @type {Group[] | null} */ (null));
  const [users, setUsers] = useState(/** @type {Person[]} */ ([]));
  const [name, setName] = useState("");
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const load = async () => {
    try {
      const [g, u] = await Promise.all([api.get("/groups"), api.get("/users")]);
      setGroups(g);
      setUsers(u);
    } catch (e) {
      setGroups([]);
      setError(`Could not read the groups: ${messageOf(e)}`);
    }
  };
  useEffect(() => {
    load();
  }, []);
  const create = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    setError("");
    try {
      const made = await api.post("/groups", { name: name.trim() });
      setName("");
      setStatus(`Made the group ${made.name}.`);
      load();
    } catch (e) {
      setError(`Not made: ${messageOf(e)}`);
    }
  };
  const changed = () => {
    load();
    onChanged();
  };
  const restrictable = offerings.filter((o) => !o.builtin);
  return html`<section class="groups-editor" aria-labelledby="groups-title">
    <h3 id="groups-title">Groups and model access</h3>
    ${
      groups === null
        ? html`<p class="pn-muted" role="status">Loading…</p>`
        : html`
          ${groups.length === 0 ? html`<p class="pn-muted">No groups yet.</p>` : null}
          <ul class="group-list">
            ${groups.map(
              (g) => html`<${GroupRow} key=${g.id} api=${api} group=${g} users=${users} onChanged=${changed}
                onStatus=${setStatus} onError=${setError} />`,
            )}
          </ul>
          <form class="group-new" onSubmit=${create}>
            <label for="group-new-name">New group</label>
            <input id="group-new-name" value=${name} maxlength="64" required placeholder="research"
              onInput=${onValue(setName)} />
            <button type="submit" class="pn-button">Make group</button>
          </form>
          <h4>Who may use each offering</h4>
          <p class="pn-muted">None ticked: everyone. The built-in offering is everyone's.</p>
          ${
            groups.length === 0
              ? html`<p class="pn-muted">Make a group first.</p>`
              : html`<ul class="access-list">
                ${restrictable.map(
                  (o) => html`<${OfferingAccess} key=${o.id} api=${api} offering=${o} groups=${groups}
                    onStatus=${setStatus} onError=${setError} onChanged=${changed} />`,
                )}
              </ul>`
          }`
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status" role="status">${status}</p>
  </section>`;
}
