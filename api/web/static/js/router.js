// The client's routes on the history API: / (a new chat), /c/<id>, /trash, /signin.
import { useEffect, useState } from "../vendor/preact.js";

const listeners = new Set();

export function parse(path = location.pathname) {
  const chat = path.match(/^\/c\/([0-9]{8}T[0-9]{6}-[0-9a-f]{8})$/);
  if (chat) return { name: "chat", id: chat[1] };
  if (path === "/trash") return { name: "trash" };
  if (path === "/signin") return { name: "signin" };
  return { name: "new" };
}

export function navigate(path, { replace = false } = {}) {
  if (path === location.pathname) return;
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  for (const listener of listeners) listener();
}

addEventListener("popstate", () => {
  for (const listener of listeners) listener();
});

export function useRoute() {
  const [route, setRoute] = useState(parse());
  useEffect(() => {
    const update = () => setRoute(parse());
    listeners.add(update);
    return () => listeners.delete(update);
  }, []);
  return route;
}
