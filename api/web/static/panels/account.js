// The account panel: everyone changes their own password here (PUT /me/password: it asks for
// the current one and ends the user's other sign-ins and API keys, never this one); an
// administrator also sees the users (GET /users) and disables, enables or deletes them
// (PATCH and DELETE /users/<id>; deleting asks first, in an in-page confirmation). The
// server keeps the last enabled administrator and says so; the panel shows what it says.
// Everyone also sees what they store and their quota (GET /me/usage), and their model
// tokens this month; an administrator every user's (panels/token_usage.js).

import { html, useEffect, useState } from "../vendor/preact.js";
import { Confirm, PanelFrame, ensureStylesheet, formatBytes, messageOf, useForm } from "./common.js";
import { MyTokens, TokenUsage } from "./token_usage.js";

ensureStylesheet();

const MIN_PASSWORD = 8;
const EMPTY = { current: "", next: "", again: "" };

function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

export function PasswordForm({ api }) {
  const { form, field, reset } = useForm(EMPTY, "password");
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
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

export function StorageUsage({ api }) {
  const [storage, setStorage] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    api
      .get("/me/usage")
      .then((usage) => setStorage(usage.storage))
      .catch((e) => setError(`Could not read your storage: ${messageOf(e)}`));
  }, []);
  const quota = storage?.quota_bytes || 0;
  const full = quota && storage.used_bytes >= quota;
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

function UserRow({ account, me, onToggle, onDelete }) {
  const self = account.id === me.id;
  return html`<tr data-user=${account.username} class=${account.disabled ? "user-disabled" : ""}>
    <th scope="row">${account.username}${self ? html` <span class="pn-muted">(you)</span>` : null}</th>
    <td>${account.is_admin ? html`<span class="pn-badge">admin</span>` : "user"}</td>
    <td>${account.disabled ? html`<span class="pn-key-unset">disabled</span>` : "active"}</td>
    <td>${new Date(account.created_at).toLocaleDateString()}</td>
    <td class="user-actions">${
      self
        ? html`<span class="pn-muted">—</span>`
        : html`<button type="button" class="pn-button small"
            aria-label=${`${account.disabled ? "Enable" : "Disable"} ${account.username}`}
            onClick=${() => onToggle(account)}>${account.disabled ? "Enable" : "Disable"}</button>
          <button type="button" class="pn-button small danger" aria-label=${`Delete ${account.username}`}
            onClick=${() => onDelete(account)}>Delete</button>`
    }</td>
  </tr>`;
}

export function Users({ api, me }) {
  const [users, setUsers] = useState(null);
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [deleting, setDeleting] = useState(null);

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

  const toggle = async (account) => {
    setError("");
    setStatus("");
    try {
      const changed = await api.patch(`/users/${account.id}`, { disabled: !account.disabled });
      setStatus(
        changed.disabled
          ? `Disabled ${changed.username}: their sign-ins and keys stop working now.`
          : `Enabled ${changed.username}.`,
      );
      await load();
    } catch (e) {
      setError(`Not changed: ${messageOf(e)}`);
    }
  };
  const remove = async () => {
    const account = deleting;
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
            <th scope="col">Created</th><th scope="col"><span class="pn-sr-only">Actions</span></th></tr></thead>
          <tbody>${users.map(
            (account) => html`<${UserRow} key=${account.id} account=${account} me=${me}
              onToggle=${toggle} onDelete=${setDeleting} />`,
          )}</tbody>
        </table>`
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status" role="status">${status}</p>
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

export default function Account({ api, user, onClose }) {
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
