// @ts-check
// The trash (deleted chats, kept 30 days: restore or delete for good) and the archive
// (archived chats: unarchive).
import { html, useEffect } from "../vendor/preact.js";
import * as actions from "./actions.js";
import { Icon, Spinner } from "./icons.js";
import { navigate } from "./router.js";
import { loadMore, reload } from "./lists.js";
import { listOf, sessions } from "./state.js";
import { formatTime, titleOf } from "./util.js";

/** @typedef {import("./state.js").Session} Session */
/** @typedef {import("../vendor/preact.js").ComponentType<{ session: Session }>} RowActions */

/**
 * A page listing chats, each with its actions and when something happened to it.
 * @param {{ listKey: string, icon: import("./icons.js").IconName, title: string, hint: string, label: string,
 *   empty: string, Actions: RowActions, when: (session: Session) => string }} props
 */
function ListPage({ listKey, icon, title, hint, label, empty, Actions, when }) {
  const current = listOf(listKey);
  useEffect(() => {
    reload(listKey);
  }, [listKey]);
  return html`<section class="trash" aria-labelledby="page-title">
    <header class="chat-head"><h1 id="page-title"><${Icon} name=${icon} /> ${title}</h1></header>
    <p class="hint">${hint}</p>
    <ul role="list" class="trash-list" aria-label=${label}>
      ${current.ids.map((id) => {
        const s = /** @type {Session} */ (sessions.value.get(id));
        return html`<li key=${id} class="trash-row">
          <span class="title-text">${titleOf(s)}</span>
          <span class="muted">${when(s)}</span>
          <${Actions} session=${s} />
        </li>`;
      })}
    </ul>
    ${current.loading && html`<p><${Spinner} /> Loading…</p>`}
    ${current.error && html`<p class="error" role="alert">${current.error}</p>`}
    ${current.done && !current.ids.length && html`<p class="empty">${empty}</p>`}
    ${!current.done && !current.loading && html`<button type="button" class="link" onClick=${() => loadMore(listKey)}>More</button>`}
  </section>`;
}

/** @param {{ session: Session }} props */
function TrashActions({ session }) {
  return html`<button type="button" class="small" onClick=${() => actions.restore(session.id)}>Restore</button>
    <button type="button" class="small danger" onClick=${() =>
      confirm(`Delete “${titleOf(session)}” for good? This cannot be undone.`) && actions.purge(session.id)}>
      Delete for good</button>`;
}

/** @param {{ session: Session }} props */
function ArchiveActions({ session }) {
  const href = `/c/${session.id}`;
  return html`<a class="small" href=${href} onClick=${(/** @type {Event} */ e) => {
    e.preventDefault();
    navigate(href);
  }}>Open</a>
    <button type="button" class="small" onClick=${() => actions.setArchived(session.id, false)}>Unarchive</button>`;
}

export function TrashView() {
  return html`<${ListPage} listKey="trash" icon="trash" title="Trash" label="Deleted chats"
    hint="Deleted chats stay here for 30 days, then they are removed for good."
    empty="The trash is empty." Actions=${TrashActions} when=${(/** @type {Session} */ s) => `deleted ${formatTime(s.deleted_at)}`} />`;
}

export function ArchivedView() {
  return html`<${ListPage} listKey="archived" icon="archive" title="Archived chats" label="Archived chats"
    hint="Archived chats are out of the sidebar; unarchive one to bring it back."
    empty="No archived chats." Actions=${ArchiveActions} when=${(/** @type {Session} */ s) => `updated ${formatTime(s.updated_at)}`} />`;
}
