// The sign-in page: POST /auth/session sets the session cookie and gives the CSRF token.
import { html, useState } from "../vendor/preact.js";
import { api } from "./api.js";

export function SignIn({ onSignedIn, notice }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await api.post("/auth/session", { username, password }));
    } catch (e) {
      setError(
        e.code === "account_disabled"
          ? "This account is disabled. Ask an administrator to enable it."
          : e.status === 401 || e.status === 400
            ? "Wrong username or password."
            : e.message,
      );
      setBusy(false);
    }
  }

  return html`<main class="signin">
    <form class="signin-card" onSubmit=${submit} aria-labelledby="signin-title">
      <div class="brand"><img src="/static/icon.svg" alt="" width="36" height="36" />
        <h1 id="signin-title">Sign in to Eonyx</h1></div>
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      <label for="signin-username">Username</label>
      <input id="signin-username" name="username" autocomplete="username" required autofocus
        value=${username} onInput=${(e) => setUsername(e.currentTarget.value)} />
      <label for="signin-password">Password</label>
      <input id="signin-password" name="password" type="password" autocomplete="current-password"
        required value=${password} onInput=${(e) => setPassword(e.currentTarget.value)} />
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <button class="primary" type="submit" disabled=${busy}>${busy ? "Signing in…" : "Sign in"}</button>
    </form>
  </main>`;
}
