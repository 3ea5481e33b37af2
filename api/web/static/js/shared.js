// @ts-check
// A chat someone shared (/shared/<token>): a read-only transcript of the snapshot the owner
// took (GET /shared/<token>), who shared it and when, and "Fork to my chats", which copies it
// into the reader's own chats (POST /shared/<token>/fork) and opens the copy. No composer:
// the copy is where the reader goes on.
import { html, useEffect, useState } from "../vendor/preact.js";
import { api } from "./api.js";
import { Icon, Spinner } from "./icons.js";
import { Markdown } from "./markdown.js";
import { navigate } from "./router.js";
import { upsert } from "./state.js";
import { formatTime } from "./util.js";

/**
 * A shared chat as the server gives it.
 * @typedef {{ role: string, content: string, created_at: string | null }} SharedMessage
 * @typedef {{ title: string | null, shared_at: string, owner: string, messages: SharedMessage[] }} Shared
 */

/** What to say when the link cannot be opened. */
function openError(/** @type {import("./api.js").ApiError} */ e) {
  if (e.status === 404) return "This link was revoked, or it never existed. Ask whoever shared it for a new one.";
  return e.message;
}

/** @param {{ owner: string, message: SharedMessage }} props */
function SharedMessageView({ owner, message }) {
  const user = message.role === "user";
  return html`<article class=${user ? "message from-user" : "message from-assistant"}
    aria-label=${user ? owner : "Assistant"}>
    <div class="bubble">
      ${user ? html`<div class="user-text">${message.content}</div>` : html`<${Markdown} text=${message.content} copyCode=${true} />`}
    </div>
  </article>`;
}

/** @param {{ token: string, onMenu: () => void }} props */
export function SharedView({ token, onMenu }) {
  const [shared, setShared] = useState(/** @type {Shared | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [forking, setForking] = useState(false);

  useEffect(() => {
    setShared(null);
    setError(null);
    api.get(`/shared/${token}`).then(setShared, (e) => setError(openError(e)));
  }, [token]);
  useEffect(() => {
    document.title = `${shared?.title || "Shared chat"} · Eonyx`;
  }, [shared?.title]);

  async function fork() {
    setForking(true);
    try {
      const session = await api.post(`/shared/${token}/fork`);
      upsert(session);
      navigate(`/c/${session.id}`);
    } catch (e) {
      setError(`The chat could not be forked: ${e.message}`);
      setForking(false);
    }
  }

  return html`<section class="chat" aria-label="Shared chat">
    <header class="chat-head">
      <button type="button" class="icon-button nav-toggle" aria-label="Show the chats" onClick=${onMenu}>
        <${Icon} name="menu" /></button>
      <h1 class="chat-title">${shared ? shared.title || "Untitled chat" : "Shared chat"}</h1>
      ${shared && html`<span class="badge">Read-only</span>`}
      ${
        shared &&
        html`<button type="button" class="primary small" onClick=${fork} disabled=${forking}>
        <${Icon} name="fork" size=${14} /> ${forking ? "Forking…" : "Fork to my chats"}</button>`
      }
    </header>
    <div class="chat-scroll">
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${!shared && !error && html`<p class="muted"><${Spinner} /> Loading the shared chat…</p>`}
      ${
        shared &&
        html`<div class="transcript">
        <p class="turn-note" role="note">Shared by <strong>${shared.owner}</strong> on ${formatTime(shared.shared_at)}:
          a read-only copy of the chat as it was then. Fork it to go on in your own chats.</p>
        ${shared.messages.map((m, i) => html`<${SharedMessageView} key=${i} owner=${shared.owner} message=${m} />`)}
        ${!shared.messages.length && html`<p class="muted">This chat had no messages when it was shared.</p>`}
      </div>`
      }
    </div>
  </section>`;
}
