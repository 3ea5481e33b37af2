// @ts-check
// The account panel: everyone changes their own password here (PUT /me/password: it asks for
// the current one and ends the user's other sign-ins and API keys, never this one); an
// administrator also sees the users (GET /users, with each one's last activity), creates them
// (POST /users) or makes an invite link (POST /invites, with a copy button), promotes,
// demotes, resets a password (a temporary one the user must change at their next sign-in),
// disables, enables or deletes them (PATCH and DELETE /users/<id>; deleting asks first, in
// an in-page confirmation). The server keeps the last enabled administrator and says so;
// the panel shows what it says.
// Everyone also sees what they store and their quota (GET /me/usage), and their model
// tokens this month; an administrator every user's (panels/token_usage.js).

import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { Confirm, Modal, PanelFrame, ensureStylesheet, formatBytes, messageOf, useForm } from "./common.js";
import { MyTokens, TokenUsage } from "./token_usage.js";
import { onValue } from "../js/util.js";

ensureStylesheet();

/** @typedef {import("./common.js").Api} Api */
/** @typedef {import("./token_usage.js").Storage} Storage */
/**
 * An account as GET /users lists it.
 * @typedef {object} Account
 * @property {string} id
 * @property {string} username
 * @property {boolean} is_admin
 * @property {boolean} [disabled]
 * @property {boolean} [must_change_password]
 * @property {string} created_at
 * @property {string | null} [last_active_at]
 */
/** @typedef {{ id: string, is_admin: boolean, created_at: string, expires_at: string, url?: string }} Invite */

const MIN_PASSWORD = 8;
const EMPTY = { current: "", next: "", again: "" };

function plural(/** @type {number} */ count, /** @type {string} */ one, /** @type {string} */ many) {
  return `${count} ${count === 1 ? one : many}`;
}

/** @param {{ api: Api, onChanged?: () => void }} props */
export function PasswordForm({ api, onChanged }) {
  const { form, field, reset } = useForm(EMPTY, "password");
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    setError("");
    setStatus("");
    if (form.next !== form.again) {
      setError("The new password and its repetition differ.");
      return;
    }
    if (form.next.length < MIN_PASSWORD) {
      setError(`The new password needs at least ${MIN_PASSWORD} characters.`);
      return;
    }
    setBusy(true);
    try {
      const done = await api.put("/me/password", {
        current_password: form.current,
        new_password: form.next,
      });
      reset();
      const ended = plural(done.revoked_tokens, "other sign-in or API key", "other sign-ins and API keys");
      setStatus(`Password changed. ${ended} ended; this browser stays signed in.`);
      onChanged?.();
    } catch (e) {
      setError(
        e.code === "wrong_password"
          ? "The current password is wrong; nothing changed."
          : `Not changed: ${messageOf(e)}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="account-form" onSubmit=${submit} aria-labelledby="password-title">
    <h3 id="password-title">Change your password</h3>
    <div class="pn-form-grid">
      <label for="password-current">Current password</label>
      <input ...${field("current")} type="password" required autocomplete="current-password" />
      <label for="password-next">New password</label>
      <input ...${field("next")} type="password" required autocomplete="new-password"
        aria-describedby="password-rule" />
      <label for="password-again">Repeat new password</label>
      <input ...${field("again")} type="password" required autocomplete="new-password" />
    </div>
    <p id="password-rule" class="pn-muted">
      At least ${MIN_PASSWORD} characters on one line. Your other sign-ins and API keys end;
      this browser stays signed in.
    </p>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status" role="status">${status}</p>
    <div class="pn-actions">
      <button type="submit" class="pn-button primary" disabled=${busy}>Change password</button>
    </div>
  </form>`;
}

/** @param {{ api: Api }} props */
export function StorageUsage({ api }) {
  const [storage, setStorage] = useState(/** @type {Storage | null} */ (null));
  const [error, setError] = useState("");
  useEffect(() => {
    api
      .get("/me/usage")
      .then((usage) => setStorage(usage.storage))
      .catch((/** @type {Error} */ e) => setError(`Could not read your storage: ${messageOf(e)}`));
  }, []);
  const quota = storage?.quota_bytes || 0;
  const full = storage && quota && storage.used_bytes >= quota;
  return html`<section class="account-storage" aria-labelledby="storage-title">
    <h3 id="storage-title">Storage</h3>
    ${
      storage
        ? html`<p class="pn-muted" id="storage-figures">
              ${formatBytes(storage.used_bytes)} used${
                quota
                  ? ` of ${formatBytes(quota)} (${Math.min(100, Math.round((100 * storage.used_bytes) / quota))} %)`
                  : ", no quota"
              }; chats, images, the trash and your memory files.
            </p>
            ${
              quota
                ? html`<meter min="0" max=${quota} value=${storage.used_bytes} high=${quota * 0.9}
              optimum="0" aria-labelledby="storage-title" aria-describedby="storage-figures"></meter>`
                : null
            }
            ${full ? html`<p class="pn-error" role="alert">Your storage is full: new messages, imports and forks are refused. Delete chats and empty the trash to free space.</p>` : null}`
        : null
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
  </section>`;
}

function lastActive(/** @type {string | null | undefined} */ stamp) {
  return stamp ? new Date(stamp).toLocaleString() : "never";
}

/**
 * @param {{ account: Account, me: import("../js/api.js").User, onToggle: (a: Account) => void,
 *   onDelete: (a: Account) => void, onRole: (a: Account) => void, onReset: (a: Account) => void }} props
 */
function UserRow({ account, me, onToggle, onDelete, onRole, onReset }) {
  const self = account.id === me.id;
  return html`<tr data-user=${account.username} class=${account.disabled ? "user-disabled" : ""}>
    <th scope="row">${account.username}${self ? html` <span class="pn-muted">(you)</span>` : null}</th>
    <td>${account.is_admin ? html`<span class="pn-badge">admin</span>` : "user"}</td>
    <td>${account.disabled ? html`<span class="pn-key-unset">disabled</span>` : "active"}${
      account.must_change_password ? html`<br /><span class="pn-muted">must change password</span>` : null
    }</td>
    <td>${new Date(account.created_at).toLocaleDateString()}</td>
    <td class="user-last-active">${lastActive(account.last_active_at)}</td>
    <td class="user-actions">${
      self
        ? html`<span class="pn-muted">—</span>`
        : html`<button type="button" class="pn-button small"
            aria-label=${`${account.is_admin ? "Demote" : "Promote"} ${account.username}`}
            title=${account.is_admin ? "Make a regular user" : "Make an administrator"}
            onClick=${() => onRole(account)}>${account.is_admin ? "Demote" : "Promote"}</button>
          <button type="button" class="pn-button small" aria-label=${`Reset password of ${account.username}`}
            onClick=${() => onReset(account)}>Reset password</button>
          <button type="button" class="pn-button small"
            aria-label=${`${account.disabled ? "Enable" : "Disable"} ${account.username}`}
            onClick=${() => onToggle(account)}>${account.disabled ? "Enable" : "Disable"}</button>
          <button type="button" class="pn-button small danger" aria-label=${`Delete ${account.username}`}
            onClick=${() => onDelete(account)}>Delete</button>`
    }</td>
  </tr>`;
}

const NEW_USER = { username: "", password: "" };

/** @param {{ api: Api, onCreated: (said: string) => void }} props */
function NewUser({ api, onCreated }) {
  const { form, field, reset } = useForm(NEW_USER, "new-user");
  const [admin, setAdmin] = useState(false);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    setError("");
    setBusy(true);
    try {
      const made = await api.post("/users", { ...form, is_admin: admin });
      reset();
      setAdmin(false);
      onCreated(`Created ${made.username}${made.is_admin ? " (administrator)" : ""}: give them the password yourself.`);
    } catch (e) {
      setError(`Not created: ${messageOf(e)}`);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="account-form" onSubmit=${submit} aria-labelledby="new-user-title">
    <h4 id="new-user-title">Create a user</h4>
    <div class="pn-form-grid">
      <label for="new-user-username">Username</label>
      <input ...${field("username")} required maxlength="64" autocomplete="off" />
      <label for="new-user-password">Password</label>
      <input ...${field("password")} type="password" required minlength=${MIN_PASSWORD} autocomplete="new-password" />
    </div>
    <label class="pn-check"><input type="checkbox" checked=${admin}
      onChange=${(/** @type {Event} */ e) => setAdmin(checked(e))} /> Administrator</label>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <div class="pn-actions">
      <button type="submit" class="pn-button primary" disabled=${busy}>Create user</button>
    </div>
  </form>`;
}

/** Copy `text`; where the clipboard API is refused (http on another host), select `input`
 * so that the person copies it with the keyboard. Says what happened. */
async function copyText(/** @type {string} */ text, /** @type {HTMLInputElement | null} */ input) {
  try {
    await navigator.clipboard.writeText(text);
    return "Link copied.";
  } catch {
    input?.focus();
    input?.select();
    return "Copying is not allowed here: the link is selected, press Ctrl+C (⌘C).";
  }
}

/** A checkbox's state, from its change event. */
const checked = (/** @type {Event} */ event) => /** @type {HTMLInputElement} */ (event.currentTarget).checked;

/** @param {{ api: Api }} props */
function Invites({ api }) {
  const [admin, setAdmin] = useState(false);
  const [made, setMade] = useState(/** @type {Invite | null} */ (null));
  const [pending, setPending] = useState(/** @type {Invite[]} */ ([]));
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);
  const linkRef = useRef(/** @type {HTMLInputElement | null} */ (null));

  const load = async () => {
    try {
      setPending(await api.get("/invites"));
    } catch (e) {
      setError(`Could not list the invites: ${messageOf(e)}`);
    }
  };
  useEffect(() => {
    load();
  }, []);

  const make = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    setError("");
    setStatus("");
    setBusy(true);
    try {
      setMade(await api.post("/invites", { is_admin: admin }));
      await load();
    } catch (e) {
      setError(`No invite made: ${messageOf(e)}`);
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (/** @type {Invite} */ invite) => {
    setError("");
    setStatus("");
    try {
      await api.del(`/invites/${invite.id}`);
      if (made?.id === invite.id) setMade(null);
      setStatus("Invite revoked: its link no longer works.");
      await load();
    } catch (e) {
      setError(`Not revoked: ${messageOf(e)}`);
    }
  };

  return html`<form class="account-form invites" onSubmit=${make} aria-labelledby="invites-title">
    <h4 id="invites-title">Invite someone</h4>
    <p class="pn-muted">A link the person opens to choose their own username and password. It works once.</p>
    <label class="pn-check"><input type="checkbox" checked=${admin}
      onChange=${(/** @type {Event} */ e) => setAdmin(checked(e))} /> The account is an administrator</label>
    <div class="pn-actions">
      <button type="submit" class="pn-button primary" disabled=${busy}>Make invite link</button>
    </div>
    ${
      made
        ? html`<div class="invite-link">
          <label for="invite-url">Invite link (until ${new Date(made.expires_at).toLocaleString()})</label>
          <div class="invite-copy">
            <input id="invite-url" ref=${linkRef} readonly value=${made.url}
              onFocus=${(/** @type {FocusEvent} */ e) => /** @type {HTMLInputElement} */ (e.currentTarget).select()} />
            <button type="button" class="pn-button"
              onClick=${async () => setStatus(await copyText(made.url || "", linkRef.current))}>Copy</button>
          </div>
          <p class="pn-muted">Shown once: Eonyx keeps only a hash of it.</p>
        </div>`
        : null
    }
    ${
      pending.length
        ? html`<ul class="invite-pending" aria-label="Invites not used yet">${pending.map(
            (invite) => html`<li key=${invite.id}>
              ${invite.is_admin ? "Administrator invite" : "Invite"} made ${new Date(invite.created_at).toLocaleString()},
              until ${new Date(invite.expires_at).toLocaleDateString()}
              <button type="button" class="pn-button small" onClick=${() => revoke(invite)}>Revoke</button>
            </li>`,
          )}</ul>`
        : null
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status invite-status" aria-live="polite">${status}</p>
  </form>`;
}

/** @param {{ account: Account, onDone: (password: string) => void, onCancel: () => void }} props */
function ResetPassword({ account, onDone, onCancel }) {
  const [password, setPassword] = useState("");
  return html`<${Modal} labelledBy="reset-title" onRequestClose=${onCancel}>
    <form onSubmit=${(/** @type {SubmitEvent} */ e) => {
      e.preventDefault();
      onDone(password);
    }}>
      <h3 id="reset-title">Reset the password of ${account.username}</h3>
      <p class="pn-muted">Give them this temporary password; at their next sign-in they must choose their own.
        Their sign-ins and API keys end now.</p>
      <div class="pn-form-grid">
        <label for="reset-password">Temporary password</label>
        <input id="reset-password" type="text" required minlength=${MIN_PASSWORD} autocomplete="off"
          value=${password} onInput=${onValue(setPassword)} />
      </div>
      <div class="pn-actions">
        <button type="button" class="pn-button" onClick=${onCancel}>Cancel</button>
        <button type="submit" class="pn-button primary">Reset password</button>
      </div>
    </form>
  <//>`;
}

/** @param {{ api: Api, me: import("../js/api.js").User }} props */
export function Users({ api, me }) {
  const [users, setUsers] = useState(/** @type {Account[] | null} */ (null));
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [deleting, setDeleting] = useState(/** @type {Account | null} */ (null));
  const [resetting, setResetting] = useState(/** @type {Account | null} */ (null));

  const load = async () => {
    try {
      setUsers(await api.get("/users"));
    } catch (e) {
      setUsers([]);
      setError(`Could not list the users: ${messageOf(e)}`);
    }
  };
  useEffect(() => {
    load();
  }, []);

  /**
   * PATCH an account; `said` words the answer for the status line.
   * @param {Account} account
   * @param {Record<string, unknown>} body
   * @param {(changed: Account) => string} said
   */
  const change = async (account, body, said, failed = "Not changed") => {
    setError("");
    setStatus("");
    try {
      setStatus(said(await api.patch(`/users/${account.id}`, body)));
      await load();
    } catch (e) {
      setError(`${failed}: ${messageOf(e)}`);
    }
  };
  const toggle = (/** @type {Account} */ account) =>
    change(account, { disabled: !account.disabled }, (changed) =>
      changed.disabled
        ? `Disabled ${changed.username}: their sign-ins and keys stop working now.`
        : `Enabled ${changed.username}.`,
    );
  const role = (/** @type {Account} */ account) =>
    change(account, { is_admin: !account.is_admin }, (changed) =>
      changed.is_admin ? `${changed.username} is now an administrator.` : `${changed.username} is now a regular user.`,
    );
  const reset = (/** @type {string} */ password) => {
    const account = /** @type {Account} */ (resetting);
    setResetting(null);
    return change(
      account,
      { password, must_change_password: true },
      (changed) => `Password of ${changed.username} reset: they must choose a new one at their next sign-in.`,
      "Not reset",
    );
  };
  const remove = async () => {
    const account = /** @type {Account} */ (deleting);
    setDeleting(null);
    setError("");
    setStatus("");
    try {
      await api.del(`/users/${account.id}`);
      setStatus(`Deleted ${account.username} and all their chats and memory.`);
      await load();
    } catch (e) {
      setError(`Not deleted: ${messageOf(e)}`);
    }
  };

  return html`<section aria-labelledby="users-title" class="users-section">
    <h3 id="users-title">Users</h3>
    ${
      users === null
        ? html`<p class="pn-muted" role="status">Loading…</p>`
        : html`<table class="offering-table users-table">
          <caption class="pn-sr-only">Users</caption>
          <thead><tr><th scope="col">Username</th><th scope="col">Role</th><th scope="col">Status</th>
            <th scope="col">Created</th><th scope="col">Last active</th>
            <th scope="col"><span class="pn-sr-only">Actions</span></th></tr></thead>
          <tbody>${users.map(
            (account) => html`<${UserRow} key=${account.id} account=${account} me=${me}
              onToggle=${toggle} onDelete=${setDeleting} onRole=${role} onReset=${setResetting} />`,
          )}</tbody>
        </table>`
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status" role="status">${status}</p>
    <${NewUser} api=${api} onCreated=${(/** @type {string} */ said) => {
      setStatus(said);
      load();
    }} />
    <${Invites} api=${api} />
    ${resetting ? html`<${ResetPassword} account=${resetting} onDone=${reset} onCancel=${() => setResetting(null)} />` : null}
    ${
      deleting
        ? html`<${Confirm}
          title=${`Delete ${deleting.username}?`}
          message=${`All of ${deleting.username}'s chats, images, memory, folders and API keys are deleted. This cannot be undone.`}
          confirmLabel="Delete user"
          onConfirm=${remove}
          onCancel=${() => setDeleting(null)}
        />`
        : null
    }
  </section>`;
}

/** @param {import("../js/panels.js").PanelProps} props */
export default function AccountPanel({ api, user, onClose }) {
  return html`<${PanelFrame} className="account-panel" titleId="account-title" title="Account"
    closeLabel="Close the account panel" onRequestClose=${onClose}>
    <div class="pn-body">
      <p class="pn-muted">Signed in as <strong>${user?.username}</strong>${user?.is_admin ? " (administrator)" : ""}.</p>
      <${StorageUsage} api=${api} />
      <${MyTokens} api=${api} />
      <${PasswordForm} api=${api} />
      ${user?.is_admin ? html`<${Users} api=${api} me=${user} />` : null}
      ${user?.is_admin ? html`<${TokenUsage} api=${api} />` : null}
    </div>
  <//>`;
}
