// @ts-check
// The client's routes on the history API: / (a new chat), /c/<id>, /trash, /archived, /signin,
// /invite/<secret> (an invite link), /shared/<token> (a chat someone shared: shared.js).
import { signal } from "../vendor/preact.js";

/**
 * A route: its name, and the chat's id, the invite's secret or the shared chat's token.
 * @typedef {{ name: "chat" | "trash" | "archived" | "signin" | "invite" | "shared" | "new", id?: string, secret?: string, token?: string }} Route
 */

/**
 * @param {string} [path]
 * @returns {Route}
 */
export function parse(path = location.pathname) {
  const chat = path.match(/^\/c\/([0-9]{8}T[0-9]{6}-[0-9a-f]{8})$/);
  if (chat) return { name: "chat", id: chat[1] };
  if (path === "/trash") return { name: "trash" };
  if (path === "/archived") return { name: "archived" };
  if (path === "/signin") return { name: "signin" };
  const invite = path.match(/^\/invite\/([A-Za-z0-9_-]{16,128})$/);
  if (invite) return { name: "invite", secret: invite[1] };
  const shared = path.match(/^\/shared\/([A-Za-z0-9_-]{32})$/);
  if (shared) return { name: "shared", token: shared[1] };
  return { name: "new" };
}

/**
 * @param {string} path
 * @param {{ replace?: boolean }} [options]
 */
export function navigate(path, { replace = false } = {}) {
  if (path === location.pathname) return;
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  route.value = parse();
}

/** The route the page shows (a component that reads it renders again when it changes). */
const route = signal(parse());

addEventListener("popstate", () => {
  route.value = parse();
});

export function useRoute() {
  return route.value;
}
