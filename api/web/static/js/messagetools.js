// @ts-check
// The controls under a message: Copy (the Markdown source), Regenerate (the last answer),
// the like star (not in a temporary chat: it leaves no memory), and on a user message Edit,
// which turns it into a text area whose Send replaces it and everything after it.
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { like, send } from "./conversation.js";
import { Icon } from "./icons.js";
import { likeOf } from "./state.js";
import { toast } from "./toast.js";
import { copyText, cx, onValue } from "./util.js";

/** @typedef {import("./state.js").Message} Message */

/** @param {{ sessionId: string, message: Message }} props */
function LikeButton({ sessionId, message }) {
  const current = likeOf(message);
  const status = current?.status;
  const liked = Boolean(current);
  /** @type {Record<string, string>} */
  const labels = { saving: "saving…", saved: "saved", failed: "failed" };
  const label = status && labels[status];
  return html`<span class="like">
    <button type="button" class=${cx("icon-button", liked && "on")} aria-pressed=${liked ? "true" : "false"}
      aria-label="Remember this turn" title="Remember this turn"
      onClick=${() => like(sessionId, message, !liked)}><${Icon} name="star" size=${16} filled=${liked} /></button>
    ${
      label &&
      html`<span class=${cx("like-status", status)} role="status"
      title=${current?.detail || ""}>${label}${status === "failed" && current?.detail ? `: ${current.detail}` : ""}</span>`
    }
  </span>`;
}

/** Copy `text` to the clipboard; a check mark says it worked, a toast that it did not. */
/** @param {{ text: string, label?: string }} props */
export function CopyButton({ text, label = "Copy" }) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(false), 1500);
    return () => clearTimeout(timer);
  }, [copied]);
  async function copy() {
    try {
      await copyText(text);
      setCopied(true);
    } catch (error) {
      toast(`Could not copy: ${error.message}`, { error: true });
    }
  }
  return html`<button type="button" class="icon-button" aria-label=${label} title=${copied ? "Copied" : label}
    onClick=${copy}><${Icon} name=${copied ? "check" : "copy"} size=${16} /></button>`;
}

/**
 * @typedef {object} ToolsProps
 * @property {string} sessionId
 * @property {Message} message
 * @property {string} text its Markdown source
 * @property {boolean} [last] the conversation's last answer: it can be regenerated
 * @property {boolean} [idle] no turn is running: a message can be edited, an answer regenerated
 * @property {boolean} [noLike] a tool step's text, or a temporary chat
 * @property {() => void} [onEdit]
 */

/** @param {ToolsProps} props */
export function MessageTools({ sessionId, message, text, last, idle, noLike, onEdit }) {
  if (message.local) return null;
  const star = !noLike && html`<${LikeButton} sessionId=${sessionId} message=${message} />`;
  if (message.role === "user")
    return html`<div class="message-tools">
      ${
        idle &&
        html`<button type="button" class="icon-button" aria-label="Edit" title="Edit"
        onClick=${onEdit}><${Icon} name="edit" size=${16} /></button>`
      }
      ${star}
    </div>`;
  return html`<div class="message-tools">
    <${CopyButton} text=${text} />
    ${
      last &&
      idle &&
      html`<button type="button" class="icon-button" aria-label="Regenerate" title="Regenerate"
        onClick=${() => send(sessionId, { regenerate: true })}><${Icon} name="retry" size=${16} /></button>`
    }
    ${star}
  </div>`;
}

/**
 * A user message being edited: Send replaces it, and all after it, with the new text and its
 * answer; Cancel (or Escape) leaves it as it was. ("Save and send": the composer has the Send.)
 * @param {{ sessionId: string, message: Message, text: string, onDone: () => void }} props
 */
export function EditForm({ sessionId, message, text, onDone }) {
  const [value, setValue] = useState(text);
  const area = useRef(/** @type {HTMLTextAreaElement | null} */ (null));
  useEffect(() => area.current?.focus(), []);
  function submit(/** @type {Event} */ event) {
    event.preventDefault();
    if (!value.trim()) return;
    onDone();
    send(sessionId, { text: value.trim(), edit: message.id });
  }
  return html`<form class="edit-message" onSubmit=${submit}>
    <textarea ref=${area} aria-label="Edit your message" value=${value} rows="3" onInput=${onValue(setValue)}
      onKeyDown=${(/** @type {KeyboardEvent} */ e) => {
        if (e.key === "Escape") onDone();
        else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) submit(e);
      }}></textarea>
    <div class="edit-actions">
      <button type="button" class="small" onClick=${onDone}>Cancel</button>
      <button type="submit" class="small primary" disabled=${!value.trim()}>Save and send</button>
    </div>
  </form>`;
}
