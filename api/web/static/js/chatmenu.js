// @ts-check
// The chat header's menu (what the sidebar row's offers, for the chat on screen) and its
// Share dialog: a read-only link for a teammate signed in to the same server, copied from
// here, revoked from here.
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import * as actions from "./actions.js";
import { api } from "./api.js";
import { folderItems } from "./chatlist.js";
import { Icon, Spinner } from "./icons.js";
import { Menu } from "./menu.js";
import { CopyButton } from "./messagetools.js";
import { titleOf } from "./util.js";

/** @typedef {import("./state.js").Session} Session */
/** @typedef {import("./menu.js").MenuItem} MenuItem */

/** @param {{ session: Session, onRename: () => void }} props */
export function ChatMenu({ session, onRename }) {
  const [sharing, setSharing] = useState(false);
  /** @returns {MenuItem[]} */
  const items = () => [
    { label: "Rename", run: onRename },
    { label: session.pinned ? "Unpin" : "Pin", run: () => actions.setPinned(session.id, !session.pinned) },
    {
      label: session.archived ? "Unarchive" : "Archive",
      disabled: session.temporary,
      run: () => actions.setArchived(session.id, !session.archived),
    },
    {
      label: "Move to folder",
      disabled: session.temporary,
      items: [
        ...folderItems(session),
        { label: "No folder", disabled: !session.folder_id, run: () => actions.moveTo(session.id, null) },
      ],
    },
    { label: "Fork", run: () => actions.fork(session.id) },
    { label: "Share", disabled: session.temporary, run: () => setSharing(true) },
    { label: "Export (.md)", run: () => actions.exportAs(session.id, "markdown") },
    { label: "Export (.zip)", run: () => actions.exportAs(session.id, "zip") },
    { label: "Delete", danger: true, run: () => actions.trash(session.id) },
  ];
  return html`<${Menu} label="Chat actions" items=${items} />
    ${sharing && html`<${ShareDialog} session=${session} onClose=${() => setSharing(false)} />`}`;
}

/**
 * The chat's share link: the one it has, else a new one (opening the dialog again shows the
 * same link, it does not replace it); Revoke ends it.
 * @typedef {{ url: string } | "revoked" | null} Link null while asked
 */

/** @param {{ session: Session, onClose: () => void }} props */
function ShareDialog({ session, onClose }) {
  const dialog = useRef(/** @type {HTMLDialogElement | null} */ (null));
  const [link, setLink] = useState(/** @type {Link} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const path = `/sessions/${session.id}/share`;

  async function run(/** @type {() => Promise<Link>} */ work) {
    setError(null);
    try {
      setLink(await work());
    } catch (e) {
      setError(e.message);
    }
  }
  const create = () => run(() => api.post(path));
  useEffect(() => {
    dialog.current?.showModal();
    run(() => api.get(path).catch((e) => (e.status === 404 ? api.post(path) : Promise.reject(e))));
  }, []);

  return html`<dialog ref=${dialog} class="share-dialog" aria-labelledby="share-title" onClose=${onClose}>
    <header class="panel-head"><h2 id="share-title">Share “${titleOf(session)}”</h2>
      <button type="button" class="icon-button" aria-label="Close" onClick=${onClose}><${Icon} name="close" /></button>
    </header>
    <p class="muted">Anyone signed in to this server can read the chat, as it stands now, at this link. They cannot
      write in it; they can fork a copy to their own chats.</p>
    ${error && html`<p class="error" role="alert">Could not share: ${error}</p>`}
    ${!link && !error && html`<p><${Spinner} label="Making the link" /> Making the link…</p>`}
    ${
      link === "revoked" &&
      html`<p role="status">The link is revoked: it no longer opens this chat.</p>
      <div class="share-actions"><button type="button" onClick=${create}>Make a new link</button>
        <button type="button" class="primary" onClick=${onClose}>Done</button></div>`
    }
    ${
      link &&
      link !== "revoked" &&
      html`<div class="share-url"><input readonly aria-label="Share link" value=${link.url}
        onFocus=${(/** @type {Event} */ e) => /** @type {HTMLInputElement} */ (e.currentTarget).select()} />
        <${CopyButton} text=${link.url} label="Copy link" /></div>
      <div class="share-actions">
        <button type="button" class="danger" onClick=${() => run(() => api.del(path).then(() => "revoked"))}>
          Revoke link</button>
        <button type="button" class="primary" onClick=${onClose}>Done</button></div>`
    }
  </dialog>`;
}
