// @ts-check
// Pages outside the app's shell for making or fixing an account's password:
// - AcceptInvite (/invite/<secret>): an administrator's invite link; the person chooses a
//   username and password (POST /invites/<secret>/accept makes the account and sets the
//   session cookie, as a sign-in does), then lands in the chat.
// - MustChangePassword: an administrator reset this account's password; until it is changed
//   the server refuses everything else (403 password_change_required), so the app shows only
//   this form (the account panel's) and a way to sign out.
import { html, useState } from "../vendor/preact.js";
import { PasswordForm } from "../panels/account.js";
import { api } from "./api.js";
import { onValue } from "./util.js";

const MIN_PASSWORD = 8;

/** What to say when accepting the invite failed. */
function inviteError(/** @type {import("./api.js").ApiError} */ e) {
  if (e.code === "invite_used") return "This invite was already used. Ask an administrator for a new link.";
  if (e.code === "invite_expired") return "This invite has expired. Ask an administrator for a new link.";
  if (e.code === "invite_not_found") return "This invite link is not valid. Check that you copied all of it.";
  if (e.code === "user_exists") return "That username is taken: choose another.";
  return e.message;
}

/** @param {{ secret: string, onSignedIn: (body: import("./api.js").SignedIn) => void }} props */
export function AcceptInvite({ secret, onSignedIn }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [busy, setBusy] = useState(false);

  async function submit(/** @type {SubmitEvent} */ event) {
    event.preventDefault();
    setError(null);
    if (password !== again) {
      setError("The password and its repetition differ.");
      return;
    }
    if (password.length < MIN_PASSWORD) {
      setError(`The password needs at least ${MIN_PASSWORD} characters.`);
      return;
    }
    setBusy(true);
    try {
      onSignedIn(await api.post(`/invites/${encodeURIComponent(secret)}/accept`, { username, password }));
    } catch (e) {
      setError(inviteError(e));
      setBusy(false);
    }
  }

  return html`<main class="signin">
    <form class="signin-card" onSubmit=${submit} aria-labelledby="invite-title">
      <div class="brand"><img src="/static/icon.svg" alt="" width="36" height="36" />
        <h1 id="invite-title">Join Eonyx</h1></div>
      <p class="notice">You were invited. Choose a username and a password for your account.</p>
      <label for="invite-username">Username</label>
      <input id="invite-username" name="username" autocomplete="username" required autofocus
        maxlength="64" aria-describedby="invite-username-rule"
        value=${username} onInput=${onValue(setUsername)} />
      <small id="invite-username-rule">Letters, digits, ".", "_" or "-", starting with a letter or digit.</small>
      <label for="invite-password">Password</label>
      <input id="invite-password" name="password" type="password" autocomplete="new-password" required
        minlength=${MIN_PASSWORD} aria-describedby="invite-password-rule"
        value=${password} onInput=${onValue(setPassword)} />
      <small id="invite-password-rule">At least ${MIN_PASSWORD} characters.</small>
      <label for="invite-again">Repeat the password</label>
      <input id="invite-again" name="again" type="password" autocomplete="new-password" required
        value=${again} onInput=${onValue(setAgain)} />
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <button class="primary" type="submit" disabled=${busy}>${busy ? "Creating your account…" : "Create account and sign in"}</button>
    </form>
  </main>`;
}

/**
 * @param {{ user: import("./api.js").User | null, onChanged: () => void, onSignOut: () => void }} props
 */
export function MustChangePassword({ user, onChanged, onSignOut }) {
  return html`<main class="signin">
    <div class="signin-card must-change">
      <div class="brand"><img src="/static/icon.svg" alt="" width="36" height="36" />
        <h1 id="must-change-title">Choose a new password</h1></div>
      <p class="notice" role="status">
        An administrator reset the password of <strong>${user?.username}</strong>. Enter the
        temporary password as the current one and choose your own to continue.
      </p>
      <div class="pn-frame must-change-form"><${PasswordForm} api=${api} onChanged=${onChanged} /></div>
      <button type="button" onClick=${onSignOut}>Sign out</button>
    </div>
  </main>`;
}
