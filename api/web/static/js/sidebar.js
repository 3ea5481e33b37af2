// @ts-check
// The sidebar: new chat, temporary toggle, search; the Folders and Chats sections (each
// collapsible, per device); the footer with the memory panel, settings (admins), the trash,
// the account, the API docs and sign-out.
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { importBundle } from "./actions.js";
import { ChatList, Row } from "./chatlist.js";
import { FolderList, NewFolderForm, useDropOut } from "./folders.js";
import { Icon, Spinner } from "./icons.js";
import { navigate } from "./router.js";
import { dropList, loadMore, setCollapsed } from "./lists.js";
import { listOf, live, sectionCollapsed, sessions } from "./state.js";
import { cx, onValue } from "./util.js";

/** @typedef {import("../vendor/preact.js").ComponentChildren} ComponentChildren */

/**
 * A collapsible section (its state per device); other props go to the <section>.
 * @param {{ name: string, title: string, actions?: ComponentChildren, children?: ComponentChildren,
 *   [prop: string]: unknown }} props
 */
function Section({ name, title, actions, children, ...rest }) {
  const collapsed = sectionCollapsed(name);
  const id = `section-${name}`;
  return html`<section class=${cx("section", collapsed && "collapsed")} aria-labelledby=${id + "-h"} ...${rest}>
    <div class="section-head">
      <h2 id=${id + "-h"}><button type="button" class="section-toggle" aria-expanded=${collapsed ? "false" : "true"}
        aria-controls=${id} onClick=${() => setCollapsed("section", name, !collapsed)}>
        <span class=${cx("chevron", !collapsed && "open")}><${Icon} name="chevron" size=${14} /></span>
        ${title}</button></h2>
      ${actions}
    </div>
    <div id=${id} class="section-body" hidden=${collapsed}>${!collapsed && children}</div>
  </section>`;
}

function ImportButton() {
  const input = useRef(/** @type {HTMLInputElement | null} */ (null));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(/** @type {string | null} */ (null));

  async function picked(/** @type {Event} */ event) {
    const element = /** @type {HTMLInputElement} */ (event.currentTarget);
    const file = element.files?.[0];
    element.value = "";
    if (!file) return;
    setBusy(true);
    setError(null);
    try {
      await importBundle(file);
    } catch (e) {
      setError(`Import refused: ${e.message}`);
    } finally {
      setBusy(false);
    }
  }

  return html`<span class="import">
    <button type="button" class="icon-button" aria-label="Import a chat (.zip)" title="Import a chat (.zip)"
      disabled=${busy} onClick=${() => input.current?.click()}>
      ${busy ? html`<${Spinner} label="Importing" />` : html`<${Icon} name="upload" />`}</button>
    <input ref=${input} type="file" accept=".zip,application/zip" hidden onChange=${picked}
      aria-label="Chat bundle to import" data-testid="import-input" />
    ${
      error &&
      html`<p class="error small import-error" role="alert">${error}
      <button type="button" class="link" onClick=${() => setError(null)}>Dismiss</button></p>`
    }
  </span>`;
}

/** The search syntax (shared/index/query.py), shown while the box is in use and read as its
 * description: a word finds its forms, word* words starting with it, "word" that word only. */
function SearchHelp() {
  return html`<p id="search-help" class="search-help">
    Finds word forms: <b>sandwich</b> finds sandwiches. <b>word*</b> finds words starting with
    it as typed, <b>"word"</b> that word only.</p>`;
}

/** @param {{ query: string, activeId: string | null }} props */
function SearchResults({ query, activeId }) {
  const key = `search:${query}`;
  const current = listOf(key);
  useEffect(() => {
    loadMore(key);
    return () => dropList(key);
  }, [key]);
  return html`<div class="search-results">
    <ul role="list" aria-label="Search results">
      ${current.ids.map(
        (id) => html`<${Row} key=${id} session=${sessions.value.get(id)}
        active=${id === activeId} snippet=${sessions.value.get(id)?.snippet} />`,
      )}
    </ul>
    ${current.loading && html`<p class="empty"><${Spinner} label="Searching" /> Searching…</p>`}
    ${current.error && html`<p class="error small" role="alert">${current.error}</p>`}
    ${current.done && !current.ids.length && html`<p class="empty">Nothing found.</p>`}
    ${
      !current.done &&
      !current.loading &&
      current.ids.length > 0 &&
      html`<button type="button" class="link" onClick=${() => loadMore(key)}>More results</button>`
    }
  </div>`;
}

/**
 * @param {{ user: import("./api.js").User, activeId: string | null, route: import("./router.js").Route,
 *   temporary: boolean, setTemporary: (on: boolean) => void,
 *   openPanel: (name: import("./panels.js").PanelName) => void, onSignOut: () => void }} props
 */
export function Sidebar({ user, activeId, route, temporary, setTemporary, openPanel, onSignOut }) {
  const [query, setQuery] = useState("");
  const [typed, setTyped] = useState("");
  const [creating, setCreating] = useState(false);
  const dropOut = useDropOut();

  useEffect(() => {
    const timer = setTimeout(() => setQuery(typed.trim()), 250);
    return () => clearTimeout(timer);
  }, [typed]);

  return html`<nav class="sidebar" aria-label="Chats">
    <div class="sidebar-top">
      <div class="brand"><img src="/static/icon.svg" alt="" width="24" height="24" /><span>Eonyx</span></div>
      <button type="button" class="new-chat" onClick=${() => navigate("/")}>
        <${Icon} name="plus" /> New chat</button>
      <button type="button" class=${cx("toggle", temporary && "on")} aria-pressed=${temporary ? "true" : "false"}
        title="A temporary chat is not saved in the list and leaves no memory"
        onClick=${() => {
          setTemporary(!temporary);
          navigate("/");
        }}>
        <${Icon} name="ghost" /> Temporary chat</button>
      <div class=${cx("search-box", typed && "typed")}>
        <div class="search">
          <${Icon} name="search" size=${16} />
          <input type="search" placeholder="Search chats" aria-label="Search chats" value=${typed}
            aria-describedby="search-help" onInput=${onValue(setTyped)} />
        </div>
        <${SearchHelp} />
      </div>
    </div>
    <div class="sidebar-scroll">
      ${
        query
          ? html`<${SearchResults} query=${query} activeId=${activeId} />`
          : html`
          <${Section} name="folders" title="Folders" actions=${html`<button type="button" class="icon-button"
            aria-label="New folder" title="New folder" onClick=${() => setCreating(true)}><${Icon} name="plus" /></button>`}>
            ${creating && html`<${NewFolderForm} onDone=${() => setCreating(false)} />`}
            <${FolderList} activeId=${activeId} />
          <//>
          <${Section} name="chats" title="Chats" actions=${html`<${ImportButton} />`}
            onDragOver=${dropOut.onDragOver} onDrop=${dropOut.onDrop}>
            <${ChatList} listKey="chats" activeId=${activeId} label="Chats" />
          <//>`
      }
    </div>
    <div class="sidebar-footer">
      <button type="button" class="icon-button" aria-label="Agent memory" title="Agent memory"
        onClick=${() => openPanel("memory")}><${Icon} name="brain" /></button>
      ${
        user.is_admin &&
        html`<button type="button" class="icon-button" aria-label="Model settings"
        title="Model settings" onClick=${() => openPanel("models")}><${Icon} name="gear" /></button>`
      }
      <a class=${cx("icon-button", route.name === "archived" && "active")} href="/archived" aria-label="Archived chats"
        title="Archived chats" onClick=${(/** @type {Event} */ e) => {
          e.preventDefault();
          navigate("/archived");
        }}><${Icon} name="archive" /></a>
      <a class=${cx("icon-button", route.name === "trash" && "active")} href="/trash" aria-label="Trash" title="Trash"
        onClick=${(/** @type {Event} */ e) => {
          e.preventDefault();
          navigate("/trash");
        }}><${Icon} name="trash" /></a>
      <button type="button" class="icon-button" aria-label="Account" title=${user.is_admin ? "Account and users" : "Account"}
        onClick=${() => openPanel("account")}><${Icon} name="user" /></button>
      <a class="icon-button" href="/api/v1/docs" target="_blank" rel="noopener" aria-label="API docs"
        title="API docs: every endpoint, to try with your token"><${Icon} name="docs" /></a>
      <span class="who" title=${live.value === "open" ? `${user.username} · live updates on` : `${user.username} · live updates off: the list refreshes every few seconds`}>
        <span class=${cx("live-dot", live.value === "open" && "on")} aria-hidden="true"></span>${user.username}</span>
      <button type="button" class="icon-button" aria-label="Sign out" title="Sign out" onClick=${onSignOut}>
        <${Icon} name="signout" /></button>
    </div>
  </nav>`;
}
