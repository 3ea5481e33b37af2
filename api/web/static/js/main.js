// @ts-check
// The web client's entry: who is signed in, then the sign-in page or the app's shell.
import { html, render, useEffect, useState } from "../vendor/preact.js";
import { api, onSignedOut, setCsrf } from "./api.js";
import { connect, disconnect } from "./live.js";
import { navigate, parse, useRoute } from "./router.js";
import { SignIn } from "./signin.js";
import { AcceptInvite, MustChangePassword } from "./invite.js";
import { Shell } from "./shell.js";
import { reset } from "./state.js";

/**
 * Who is signed in: not known yet, nobody (and why, said on the sign-in page), someone who
 * must change their password first, or someone.
 * @typedef {{ status: "checking" | "out" | "change" | "in", user: User | null, notice: string | null }} Auth
 * @typedef {import("./api.js").User} User
 */

function App() {
  const [auth, setAuth] = useState(/** @type {Auth} */ ({ status: "checking", user: null, notice: null }));
  const route = useRoute();

  function signedIn(/** @type {import("./api.js").SignedIn} */ body) {
    setCsrf(body.csrf_token);
    if (parse().name === "invite") navigate("/", { replace: true });
    if (body.must_change_password) {
      // A reset password: the server refuses everything but changing it or signing out.
      setAuth({ status: "change", user: body.user, notice: null });
      return;
    }
    setAuth({ status: "in", user: body.user, notice: null });
    connect();
    if (parse().name === "signin") navigate(sessionStorage.getItem("eonyx.after") || "/", { replace: true });
    sessionStorage.removeItem("eonyx.after");
  }

  function signedOut(/** @type {string | null} */ notice = null) {
    disconnect();
    setCsrf(null);
    reset();
    setAuth({ status: "out", user: null, notice });
    if (parse().name !== "signin" && parse().name !== "invite") {
      sessionStorage.setItem("eonyx.after", location.pathname);
      navigate("/signin", { replace: true });
    }
  }

  useEffect(() => {
    api.get("/auth/session").then(signedIn, () => signedOut());
    return onSignedOut(() => signedOut("Your session ended: sign in again."));
  }, []);

  async function signOut() {
    try {
      await api.del("/auth/session");
    } finally {
      sessionStorage.removeItem("eonyx.after");
      signedOut("You are signed out.");
    }
  }

  if (auth.status === "checking") return html`<p class="boot" role="status">Loading Eonyx…</p>`;
  if (route.name === "invite") return html`<${AcceptInvite} secret=${route.secret} onSignedIn=${signedIn} />`;
  if (auth.status === "change") {
    const changed = () => api.get("/auth/session").then(signedIn);
    return html`<${MustChangePassword} user=${auth.user} onChanged=${changed} onSignOut=${signOut} />`;
  }
  if (auth.status === "out" || route.name === "signin") {
    return html`<${SignIn} onSignedIn=${signedIn} notice=${auth.notice} />`;
  }
  return html`<${Shell} user=${auth.user} route=${route} onSignOut=${signOut} />`;
}

render(html`<${App} />`, /** @type {HTMLElement} */ (document.getElementById("app")));
