// @ts-check
// A list of chats as the sidebar shows it: compact rows in the server's order, loaded page by
// page as it scrolls into view, with skeleton rows where the next page will land.
import { Component, html, signal, useEffect, useRef, useState } from "../vendor/preact.js";
import * as actions from "./actions.js";
import { api } from "./api.js";
import { Icon, Spinner } from "./icons.js";
import { Menu } from "./menu.js";
import { navigate } from "./router.js";
import { loadMore } from "./lists.js";
import { folders, isPending, listOf, palette, pendingTitles, sessions } from "./state.js";
import { cx, formatTime, inputValue, plural, titleOf } from "./util.js";

const SKELETONS = 6;

/** @typedef {import("./state.js").Session} Session */
/**
 * A search hit's snippet: its text and the offsets of the matches.
 * @typedef {{ text: string, highlights?: [number, number][] }} Snippet
 */
/**
 * @typedef {object} RowProps
 * @property {Session | undefined} session
 * @property {boolean} active
 * @property {boolean} [pending]
 * @property {Snippet | null} [snippet]
 */

/** @param {{ listKey: string, activeId: string | null, label: string, empty?: string }} props */
export function ChatList({ listKey, activeId, label, empty = "No chats yet." }) {
  const current = listOf(listKey);
  const sentinel = useRef(/** @type {HTMLLIElement | null} */ (null));

  useEffect(() => {
    if (!current.ids.length && !current.done && !current.loading) loadMore(listKey);
  }, [listKey]);

  useEffect(() => {
    const element = sentinel.current;
    if (!element) return;
    const observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && loadMore(listKey), {
      rootMargin: "200px",
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [listKey, current.done, current.ids.length]);

  return html`<div class="chat-list">
    <ul role="list" aria-label=${label} aria-busy=${current.loading ? "true" : "false"}>
      ${current.ids.map((id) => {
        const session = sessions.value.get(id);
        return html`<${QuietRow} key=${id} session=${session} active=${id === activeId}
          pending=${pendingTitles.value.has(id)} />`;
      })}
      ${
        !current.done &&
        Array.from(
          { length: SKELETONS },
          (_, i) => html`<li key=${"s" + i} class="row skeleton"
        aria-hidden="true" ref=${i === 0 ? sentinel : null}><span></span></li>`,
        )
      }
    </ul>
    ${
      current.error &&
      html`<p class="error small" role="alert">${current.error}
      <button type="button" class="link" onClick=${() => loadMore(listKey)}>Retry</button></p>`
    }
    ${current.done && !current.ids.length && html`<p class="empty">${empty}</p>`}
  </div>`;
}

/** @returns {import("./menu.js").MenuItem[]} */
export function folderItems(/** @type {Session} */ session) {
  return folders.value.map((f) => ({
    label: f.name,
    swatch: palette.value.find((c) => c.name === f.color)?.hex,
    disabled: f.id === session.folder_id,
    run: () => actions.moveTo(session.id, f.id),
  }));
}

/** @param {{ source?: string }} props */
function Badge({ source }) {
  if (source === "api") return html`<span class="badge badge-api" title="Created through the API">API</span>`;
  if (source === "teams") return html`<span class="badge badge-teams" title="From Microsoft Teams">Teams</span>`;
  if (source === "mcp") return html`<span class="badge badge-mcp" title="Notes from a coding agent (MCP)">MCP</span>`;
  return null;
}

/** A row that renders again only when its session, its selection or its spinner changed: a
 * change to one chat does not redraw the hundreds of rows around it. */
/** @extends {Component<RowProps>} */
class QuietRow extends Component {
  /** @param {RowProps} next */
  shouldComponentUpdate(next) {
    const now = this.props;
    return next.session !== now.session || next.active !== now.active || next.pending !== now.pending;
  }

  /** @param {RowProps} props */
  render(props) {
    return html`<${Row} ...${props} />`;
  }
}

/** @param {RowProps} props */
export function Row({ session, active, pending = isPending(session), snippet = null }) {
  const [renaming, setRenaming] = useState(false);
  if (!session) return null;
  const title = titleOf(session);
  const href = `/c/${session.id}`;

  function open(/** @type {MouseEvent} */ event) {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.button === 1) return;
    event.preventDefault();
    navigate(href);
  }

  function dragStart(/** @type {DragEvent} */ event) {
    const transfer = /** @type {DataTransfer} */ (event.dataTransfer);
    transfer.setData("application/x-eonyx-session", /** @type {Session} */ (session).id);
    transfer.effectAllowed = "move";
  }

  /** @returns {import("./menu.js").MenuItem[]} */
  const items = () => [
    { label: "Rename", run: () => setRenaming(true) },
    { label: session.pinned ? "Unpin" : "Pin", run: () => actions.setPinned(session.id, !session.pinned) },
    {
      label: session.archived ? "Unarchive" : "Archive",
      run: () => actions.setArchived(session.id, !session.archived),
    },
    { label: "Fork", run: () => actions.fork(session.id) },
    {
      label: "Move to folder",
      items: [
        ...folderItems(session),
        { label: "No folder", disabled: !session.folder_id, run: () => actions.moveTo(session.id, null) },
      ],
    },
    { label: "Export (.md)", run: () => actions.exportAs(session.id, "markdown") },
    { label: "Export (.zip)", run: () => actions.exportAs(session.id, "zip") },
    { label: "Delete", danger: true, run: () => actions.trash(session.id) },
  ];

  return html`<li class=${cx("row", active && "active", pending && "pending")} data-session=${session.id}>
    ${
      renaming
        ? html`<${RenameForm} title=${session.title || ""} label="Chat title"
          onDone=${(/** @type {string | null} */ value) => {
            setRenaming(false);
            if (value !== null) actions.rename(session.id, value);
          }} />`
        : html`<a class="row-link" href=${href} onClick=${open} draggable="true" onDragStart=${dragStart}
          aria-current=${active ? "page" : null}>
          <span class="row-title">
            ${session.pinned && html`<span class="pin" title="Pinned"><${Icon} name="pin" size=${12} /></span>`}
            <span class="title-text">${title}</span>
            ${session.forked_from && html`<${ForkMark} id=${session.forked_from} />`}
            ${session.imported && html`<${ImportMark} how=${session.imported} />`}
            ${pending && html`<${Spinner} label="Generating the title" />`}
            <${Badge} source=${session.source} />
          </span>
          <span class="row-meta">
            <time datetime=${session.updated_at}>${formatTime(session.updated_at)}</time>
            <span>${plural(session.message_count || 0, "message")}</span>
            ${session.image_count ? html`<span>${plural(session.image_count, "image")}</span>` : null}
            ${session.forked_from && html`<${ForkMark} id=${session.forked_from} line=${true} />`}
            ${
              session.imported &&
              html`<span class="row-origin" title=${IMPORTED[session.imported]}>${IMPORTED[session.imported]}</span>`
            }
          </span>
          ${snippet && html`<${Snippet} snippet=${snippet} />`}
        </a>
        <${Menu} label=${`Actions for ${title}`} items=${items} className="row-menu" />`
    }
  </li>`;
}

/** @param {{ title: string, label: string, onDone: (value: string | null) => void }} props */
export function RenameForm({ title, label, onDone }) {
  const input = useRef(/** @type {HTMLInputElement | null} */ (null));
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);
  let finished = false;
  const done = (/** @type {string | null} */ value) => {
    if (finished) return;
    finished = true;
    onDone(value);
  };
  return html`<form class="rename" onSubmit=${(/** @type {Event} */ e) => {
    e.preventDefault();
    done(input.current?.value.trim() || null);
  }}>
    <input ref=${input} aria-label=${label} value=${title} maxlength="200"
      onKeyDown=${(/** @type {KeyboardEvent} */ e) => e.key === "Escape" && done(null)}
      onBlur=${(/** @type {Event} */ e) => {
        const value = inputValue(e).trim();
        done(value && value !== title ? value : null);
      }} />
  </form>`;
}

/** A search hit's snippet, its matches marked (offsets from the server; text, never HTML). */
/** @param {{ snippet: Snippet }} props */
function Snippet({ snippet }) {
  /** @type {import("../vendor/preact.js").ComponentChildren[]} */
  const parts = [];
  let at = 0;
  for (const [start, end] of snippet.highlights || []) {
    if (start > at) parts.push(snippet.text.slice(at, start));
    parts.push(html`<mark>${snippet.text.slice(start, end)}</mark>`);
    at = end;
  }
  parts.push(snippet.text.slice(at));
  return html`<span class="snippet">${parts}</span>`;
}

/** The chats forks came from that no loaded list holds, asked for once each (null: gone). */
const origins = signal(/** @type {Map<string, Session | null>} */ (new Map()));

/** The title of the chat a fork came from; "a deleted chat" when it is gone for good. */
function useOrigin(/** @type {string} */ id) {
  const known = sessions.value.get(id) || origins.value.get(id);
  useEffect(() => {
    if (sessions.peek().has(id) || origins.peek().has(id)) return;
    origins.value = new Map(origins.peek()).set(id, null);
    api.get(`/sessions/${id}`).then(
      (/** @type {Session} */ original) => (origins.value = new Map(origins.peek()).set(id, original)),
      () => {}, // deleted for good
    );
  }, [id]);
  return known ? `“${titleOf(known)}”` : "a deleted chat";
}

/** A fork's mark: an icon beside its title naming the original, and (`line`) that name in
 * the row's details (shown on hover and for the open chat; the row's height is fixed). */
/** @param {{ id: string, line?: boolean }} props */
function ForkMark({ id, line = false }) {
  const label = `Forked from ${useOrigin(id)}`;
  return line
    ? html`<span class="row-origin" title=${label}>${label}</span>`
    : html`<span class="fork-mark" role="img" aria-label=${label} title=${label}><${Icon} name="fork" size=${12} /></span>`;
}

/** What an import's mark says: the title is the original's, kept by the import. */
const IMPORTED = { bundle: "Imported from a bundle", shared: "Forked from a shared link" };

/** An import's mark beside its title (and, in the row's details, the line it says). */
/** @param {{ how: "bundle" | "shared" }} props */
function ImportMark({ how }) {
  return html`<span class="import-mark" role="img" aria-label=${IMPORTED[how]} title=${IMPORTED[how]}>
    <${Icon} name=${how === "shared" ? "fork" : "upload"} size=${12} /></span>`;
}
