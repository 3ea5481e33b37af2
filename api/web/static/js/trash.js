// The trash: deleted chats, kept 30 days; restore or delete for good.
import { html, useEffect } from "../vendor/preact.js";
import * as actions from "./actions.js";
import { Icon, Spinner } from "./icons.js";
import { list, loadMore, reload, state } from "./store.js";
import { formatTime, titleOf } from "./util.js";

export function TrashView() {
  const current = list("trash");
  useEffect(() => {
    reload("trash");
  }, []);
  return html`<section class="trash" aria-labelledby="trash-title">
    <header class="chat-head"><h1 id="trash-title"><${Icon} name="trash" /> Trash</h1></header>
    <p class="hint">Deleted chats stay here for 30 days, then they are removed for good.</p>
    <ul role="list" class="trash-list" aria-label="Deleted chats">
      ${current.ids.map((id) => {
        const s = state.sessions.get(id);
        return html`<li key=${id} class="trash-row">
          <span class="title-text">${titleOf(s)}</span>
          <span class="muted">deleted ${formatTime(s.deleted_at)}</span>
          <button type="button" class="small" onClick=${() => actions.restore(id)}>Restore</button>
          <button type="button" class="small danger" onClick=${() =>
            confirm(`Delete “${titleOf(s)}” for good? This cannot be undone.`) && actions.purge(id)}>
            Delete for good</button>
        </li>`;
      })}
    </ul>
    ${current.loading && html`<p><${Spinner} /> Loading…</p>`}
    ${current.done && !current.ids.length && html`<p class="empty">The trash is empty.</p>`}
    ${!current.done && !current.loading && html`<button type="button" class="link" onClick=${() => loadMore("trash")}>More</button>`}
  </section>`;
}
