// @ts-check
// The signed-in app: the sidebar beside the chat (or the trash, or a chat someone shared), and
// the panels' dialog.
import { html, useEffect, useState } from "../vendor/preact.js";
import { ChatView } from "./chat.js";
import { PanelDialog } from "./panels.js";
import { SharedView } from "./shared.js";
import { Sidebar } from "./sidebar.js";
import { loadFolders, loadUiState } from "./lists.js";
import { live } from "./state.js";
import { Toasts } from "./toast.js";
import { ArchivedView, TrashView } from "./trash.js";
import { cx } from "./util.js";

/**
 * @param {{ user: import("./api.js").User, route: import("./router.js").Route, onSignOut: () => void }} props
 */
export function Shell({ user, route, onSignOut }) {
  const [panel, setPanel] = useState(/** @type {import("./panels.js").PanelName | null} */ (null));
  const [temporary, setTemporary] = useState(false);
  const [ready, setReady] = useState(false);
  const [navOpen, setNavOpen] = useState(false);

  useEffect(() => {
    Promise.allSettled([loadFolders(), loadUiState()]).then(() => setReady(true));
  }, []);
  useEffect(() => setNavOpen(false), [route.name, route.id]);

  const activeId = route.name === "chat" ? route.id : null;
  return html`<div class=${cx("shell", navOpen && "nav-open")} data-live=${live.value}>
    ${
      ready
        ? html`<${Sidebar} user=${user} route=${route} activeId=${activeId} temporary=${temporary}
          setTemporary=${setTemporary} openPanel=${setPanel} onSignOut=${onSignOut} />`
        : html`<nav class="sidebar" aria-label="Chats" aria-busy="true"></nav>`
    }
    ${navOpen && html`<div class="backdrop" aria-hidden="true" onClick=${() => setNavOpen(false)}></div>`}
    <main class="main">
      ${
        route.name === "trash"
          ? html`<${TrashView} />`
          : route.name === "archived"
            ? html`<${ArchivedView} />`
            : route.name === "shared"
              ? html`<${SharedView} token=${route.token || ""} onMenu=${() => setNavOpen(!navOpen)} />`
              : html`<${ChatView} key=${activeId || "new"} sessionId=${activeId} temporary=${temporary}
            onMenu=${() => setNavOpen(!navOpen)} />`
      }
    </main>
    ${panel && html`<${PanelDialog} name=${panel} user=${user} onClose=${() => setPanel(null)} />`}
    <${Toasts} />
  </div>`;
}
