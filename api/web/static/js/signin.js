// @ts-check
// The sign-in page: POST /auth/session sets the session cookie and gives the CSRF token.
// With single sign-on set up (GET /auth/methods), a button goes to the provider instead
// (a navigation: the server sends the browser there and, signed in, back to /).
import { html, useEffect, useState } from "../vendor/preact.js";
import { api } from "./api.js";
import { onValue } from "./util.js";

/**
 * GET /auth/methods: how one may sign in here.
 * @typedef {{ password: boolean, oidc: { name: string, login_url: string } | null }} Methods
 */

/**
 * @param {{ onSignedIn: (body: import("./api.js").SignedIn) => void, notice: string | null }} props
 */
export function SignIn({ onSignedIn, notice }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [busy, setBusy] = useState(false);
  const [methods, setMethods] = useState(/** @type {Methods} */ ({ password: true, oidc: null }));
  const sso = methods.oidc;

  useEffect(() => {
    api.get("/auth/methods").then(setMethods, () => {});
  }, []);

  async function submit(/** @type {SubmitEvent} */ event) {
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
      ${
        sso &&
        html`<button class="primary sso" type="button" onClick=${() => window.location.assign(sso.login_url)}>
          Sign in with ${sso.name}
        </button>
        ${methods.password && html`<p class="or">or with a username and password</p>`}`
      }
      ${
        methods.password &&
        html`<label for="signin-username">Username</label>
          <input id="signin-username" name="username" autocomplete="username" required autofocus
            value=${username} onInput=${onValue(setUsername)} />
          <label for="signin-password">Password</label>
          <input id="signin-password" name="password" type="password" autocomplete="current-password"
            required value=${password} onInput=${onValue(setPassword)} />
          ${error && html`<p class="error" role="alert">${error}</p>`}
          <button class=${sso ? "" : "primary"} type="submit" disabled=${busy}>${busy ? "Signing in…" : "Sign in"}</button>`
      }
    </form>
  </main>`;
}
