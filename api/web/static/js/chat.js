// @ts-check
// The chat: the transcript (Markdown, collapsible tool steps, memory notices, images, and the
// message controls of messagetools.js), the streaming answer with Stop, Retry with the
// server's reason, the context gauge, and the composer (images by picker, paste or drop).
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { ChatMenu } from "./chatmenu.js";
import { leftNewChat, load, NEW_CHAT, send, stop } from "./conversation.js";
import { Icon, Spinner } from "./icons.js";
import { Markdown } from "./markdown.js";
import { EditForm, MessageTools } from "./messagetools.js";
import { ModelPicker } from "./models.js";
import * as actions from "./actions.js";
import { RenameForm } from "./chatlist.js";
import { navigate, parse } from "./router.js";
import { conversation, isPending, sessions } from "./state.js";
import { cx, onValue, titleOf } from "./util.js";

/** @typedef {import("./state.js").Message} Message */
/** @typedef {import("./state.js").Conversation} Conversation */
/** @typedef {import("./state.js").Turn} Turn */
/** @typedef {{ file: File, url: string }} Attachment an image in the composer, and its preview's URL */
/** @typedef {Conversation["context"]} Context */
/** @typedef {import("./state.js").Turn["steps"][number]["call"]} ToolCall */
/** @typedef {import("./state.js").Turn["memory"]} MemoryWrites */
/**
 * A transcript's entry as shown: a tool step, or a message.
 * @typedef {{ kind: "step", key: string, call: ToolCall, result: Message | undefined }
 *   | { kind: "message", key: string, message: Message, noLike?: boolean }} Item
 */

/** A message's text: its content, or the text parts of a content made of parts. */
const textOf = (/** @type {unknown} */ content) =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content
          .filter((p) => p.type === "text")
          .map((p) => p.text)
          .join("\n")
      : "";

/** @param {{ context: Context | undefined }} props */
function Gauge({ context }) {
  if (!context || context.percent === null || context.percent === undefined) return null;
  const percent = Math.round(context.percent);
  const hot = context.percent >= 80;
  return html`<span class=${cx("gauge", hot && "hot")} role="meter" aria-label="Context used"
    aria-valuemin="0" aria-valuemax="100" aria-valuenow=${percent}
    title=${`${context.tokens} of ${context.window} tokens`}>{ctx ${percent}%}</span>`;
}

/** @param {{ sessionId: string, names?: string[], previews?: string[] }} props */
function Images({ sessionId, names = [], previews = [] }) {
  const sources = [...names.map((n) => `/api/v1/sessions/${sessionId}/images/${n}`), ...previews];
  if (!sources.length) return null;
  return html`<div class="images">${sources.map(
    (src, i) => html`<a href=${src} target="_blank" rel="noopener" key=${src}>
    <img src=${src} alt=${`Attached image ${i + 1}`} loading="lazy" /></a>`,
  )}</div>`;
}

/** @param {{ call: ToolCall, result: Message | null | undefined }} props */
function ToolStep({ call, result }) {
  const fn = call.function || { name: "", arguments: "" };
  let args = fn.arguments || "";
  try {
    args = JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    /* shown as sent */
  }
  return html`<details class="tool-step">
    <summary><${Icon} name="gear" size=${14} /> Used <code>${fn.name}</code>
      ${!result && html`<${Spinner} label="Running the tool" />`}</summary>
    <div class="tool-body"><div class="muted">Arguments</div><pre>${args}</pre>
      ${result && html`<div class="muted">Result</div><pre>${textOf(result.content)}</pre>`}</div>
  </details>`;
}

/** @param {{ writes: MemoryWrites | undefined }} props */
function MemoryNotices({ writes }) {
  if (!writes?.length) return null;
  return html`<div class="memory-notices">${writes.map(
    (w, i) => html`<p class="memory-notice" key=${i} role="note">
    <${Icon} name="brain" size=${14} /> Memory updated: ${w.file || "memory"}${w.action ? ` (${w.action})` : ""}</p>`,
  )}</div>`;
}

/** The transcript's messages grouped for display: tool calls with their results. */
function group(/** @type {Message[]} */ messages) {
  /** @type {Item[]} */
  const out = [];
  const results = new Map(messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m]));
  for (const m of messages) {
    if (m.role === "tool" || m.role === "system") continue;
    if (m.role === "assistant" && m.tool_calls?.length) {
      for (const call of m.tool_calls)
        out.push({ kind: "step", key: `${m.id}-${call.id}`, call, result: results.get(call.id) });
      if (textOf(m.content).trim())
        out.push({ kind: "message", key: m.id + "-text", message: { ...m, like: undefined }, noLike: true });
      continue;
    }
    out.push({ kind: "message", key: m.id, message: m });
  }
  return out;
}

/**
 * @param {{ sessionId: string, message: Message, noLike?: boolean, notices?: MemoryWrites, last?: boolean,
 *   idle?: boolean }} props
 */
function Message({ sessionId, message, noLike, notices, last, idle }) {
  const user = message.role === "user";
  const [editing, setEditing] = useState(false);
  const text = textOf(message.content);
  return html`<article class=${cx("message", user ? "from-user" : "from-assistant")} data-message=${message.id}
    aria-label=${user ? "You" : "Assistant"}>
    ${
      editing
        ? html`<${EditForm} sessionId=${sessionId} message=${message} text=${text} onDone=${() => setEditing(false)} />`
        : html`<div class="bubble">
      ${user ? html`<div class="user-text">${text}</div>` : html`<${Markdown} text=${text} copyCode=${true} />`}
      <${Images} sessionId=${sessionId} names=${message.images} previews=${message.previews} />
    </div>
    <${MessageTools} sessionId=${sessionId} message=${message} text=${text} last=${last} idle=${idle}
      noLike=${noLike} onEdit=${() => setEditing(true)} />`
    }
    ${notices && html`<${MemoryNotices} writes=${notices} />`}
  </article>`;
}

/** The key of the conversation's last answer (the one Regenerate replaces), if it ends with one. */
function lastAnswer(/** @type {Item[]} */ items) {
  const last = items[items.length - 1];
  return last?.kind === "message" && last.message.role === "assistant" ? last.key : null;
}

/** Answer again after a failure: the saved user message when the last one is (Retry), else
 * the saved answer's place (a regenerate that failed after the server kept the old answer). */
function answerAgain(/** @type {string} */ sessionId, /** @type {Conversation} */ c) {
  const last = c.messages[c.messages.length - 1];
  send(sessionId, last?.role === "assistant" ? { regenerate: true } : { retry: true });
}

/** The last saved message is the user's and no turn is answering it (after a model outage,
 * on reopening or reloading the chat): the person is offered the answer. */
function unanswered(/** @type {Conversation} */ c) {
  const last = c.messages[c.messages.length - 1];
  const answering = c.turn && ["streaming", "error", "stopped"].includes(c.turn.status);
  // A note a coding agent left over MCP (a user message named "mcp") waits for no answer.
  return c.loaded && last?.role === "user" && last?.name !== "mcp" && !answering;
}

/** @param {{ sessionId: string, c: Conversation, temporary: boolean }} props */
function Transcript({ sessionId, c, temporary }) {
  const turn = c.turn;
  const items = group(c.messages);
  const idle = !turn || turn.status !== "streaming";
  const last = turn && turn.status !== "done" ? null : lastAnswer(items);
  return html`<div class="transcript">
    ${items.map((item) =>
      item.kind === "step"
        ? html`<${ToolStep} key=${item.key} call=${item.call} result=${item.result} />`
        : html`<${Message} key=${item.key} sessionId=${sessionId} message=${item.message}
          noLike=${item.noLike || temporary} notices=${c.notices?.get(item.message.id)}
          last=${item.key === last} idle=${idle} />`,
    )}
    ${
      turn &&
      turn.status !== "done" &&
      html`
      ${turn.local && html`<${Message} sessionId=${sessionId} message=${turn.local} />`}
      ${turn.steps.map((s) => html`<${ToolStep} key=${s.call.id} call=${s.call} result=${s.result} />`)}
      ${
        (turn.text || turn.status === "streaming") &&
        html`<article class="message from-assistant streaming" aria-label="Assistant"
        aria-busy=${turn.status === "streaming" ? "true" : "false"}>
        <div class="bubble">${turn.text ? html`<${Markdown} text=${turn.text} copyCode=${true} />` : html`<${Spinner} label="Thinking" />`}</div>
      </article>`
      }
      <${MemoryNotices} writes=${turn.memory} />
      ${
        turn.status === "stopped" &&
        html`<p class="turn-note" role="status">Stopped.
        <button type="button" class="link" onClick=${() => send(sessionId, { retry: true })}>Retry</button></p>`
      }
      ${
        turn.status === "error" &&
        html`<div class="turn-error" role="alert">
        <p><strong>The answer failed:</strong> ${turn.error?.message}</p>
        <button type="button" class="small" onClick=${() => answerAgain(sessionId, c)}>
          <${Icon} name="retry" size=${14} /> Retry</button></div>`
      }
      ${
        turn.status === "refused" &&
        html`<div class="turn-error" role="alert">
        <p><strong>Not sent:</strong> ${turn.error?.message}. Your message is back in the box.</p></div>`
      }
    `
    }
    ${
      unanswered(c) &&
      html`<p class="turn-note" role="status">This message has no answer yet.${" "}
        <button type="button" class="small" onClick=${() => send(sessionId, { retry: true })}>
          <${Icon} name="retry" size=${14} /> Answer now</button></p>`
    }
  </div>`;
}

/** The images attached in the composer, each with the blob: URL of its preview: made once
 * when the image is attached, revoked when it is removed, sent (`clear`) or the composer goes. */
function useAttachments() {
  const [attached, setAttached] = useState(/** @type {Attachment[]} */ ([]));
  const current = useRef(attached);
  current.current = attached;
  useEffect(() => () => current.current.forEach((a) => URL.revokeObjectURL(a.url)), []);
  return {
    attached,
    add(/** @type {File[]} */ files) {
      const made = files.map((file) => ({ file, url: URL.createObjectURL(file) }));
      setAttached((now) => [...now, ...made]);
    },
    remove(/** @type {Attachment} */ gone) {
      URL.revokeObjectURL(gone.url);
      setAttached((now) => now.filter((a) => a !== gone));
    },
    clear() {
      current.current.forEach((a) => URL.revokeObjectURL(a.url));
      setAttached([]);
    },
  };
}

/**
 * @param {{ busy: boolean, onSend: (text: string, files: File[]) => void, onStop: () => void, disabled: boolean,
 *   returned: Turn["returned"] }} props
 */
function Composer({ busy, onSend, onStop, disabled, returned }) {
  const [text, setText] = useState("");
  const { attached, add, remove, clear } = useAttachments();
  useEffect(() => {
    // A message that was not sent comes back, unless something new was typed meanwhile.
    if (!returned) return;
    setText((now) => now || returned.text);
    if (returned.files.length) add(returned.files);
  }, [returned]);
  const [dragging, setDragging] = useState(false);
  const picker = useRef(/** @type {HTMLInputElement | null} */ (null));
  const area = useRef(/** @type {HTMLTextAreaElement | null} */ (null));
  useEffect(() => area.current?.focus(), []);

  const addFiles = (/** @type {FileList | File[]} */ list) => {
    const images = [...list].filter((f) => f.type.startsWith("image/"));
    if (images.length) add(images);
    return images.length > 0;
  };

  function submit(/** @type {Event | undefined} */ event) {
    event?.preventDefault();
    if (busy || disabled || (!text.trim() && !attached.length)) return;
    onSend(
      text.trim() || "(image)",
      attached.map((a) => a.file),
    );
    setText("");
    clear();
  }

  return html`<form class=${cx("composer", dragging && "dragging")} onSubmit=${submit}
    onDragOver=${(/** @type {DragEvent} */ e) => {
      if (e.dataTransfer?.types.includes("Files")) {
        e.preventDefault();
        setDragging(true);
      }
    }}
    onDragLeave=${() => setDragging(false)}
    onDrop=${(/** @type {DragEvent} */ e) => {
      setDragging(false);
      if (e.dataTransfer?.files.length) {
        e.preventDefault();
        addFiles(e.dataTransfer.files);
      }
    }}>
    ${
      attached.length > 0 &&
      html`<div class="attachments">${attached.map(
        (/** @type {Attachment} */ a) => html`<span class="attachment" key=${a.url}>
      <img src=${a.url} alt=${`To send: ${a.file.name}`} />
      <button type="button" class="icon-button" aria-label=${`Remove ${a.file.name}`}
        onClick=${() => remove(a)}><${Icon} name="close" size=${12} /></button></span>`,
      )}</div>`
    }
    <div class="composer-row">
      <button type="button" class="icon-button" aria-label="Attach images" title="Attach images"
        onClick=${() => picker.current?.click()}><${Icon} name="image" /></button>
      <input ref=${picker} type="file" accept="image/*" multiple hidden aria-label="Images to attach"
        onChange=${(/** @type {Event} */ e) => {
          const input = /** @type {HTMLInputElement} */ (e.currentTarget);
          addFiles(input.files || []);
          input.value = "";
        }} />
      <textarea ref=${area} rows="1" aria-label="Message" placeholder="Send a message" value=${text}
        onInput=${onValue(setText)}
        onPaste=${(/** @type {ClipboardEvent} */ e) =>
          e.clipboardData?.files.length && addFiles(e.clipboardData.files) && e.preventDefault()}
        onKeyDown=${(/** @type {KeyboardEvent} */ e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) submit(e);
        }}></textarea>
      ${
        busy
          ? html`<button type="button" class="stop" aria-label="Stop" onClick=${onStop}><${Icon} name="stop" /> Stop</button>`
          : html`<button type="submit" class="primary send" aria-label="Send" disabled=${disabled}><${Icon} name="send" /></button>`
      }
    </div>
  </form>`;
}

/**
 * The chat's header: the title (its spinner while generated; a text field while renamed), the
 * model picker, the context gauge and the chat's menu (chatmenu.js).
 * @param {{ sessionId: string | null, temporary: boolean, context: Context | undefined, onMenu: () => void }} props
 */
function ChatHead({ sessionId, temporary, context, onMenu }) {
  const session = sessionId ? sessions.value.get(sessionId) : null;
  const [renaming, setRenaming] = useState(false);
  return html`<header class="chat-head">
    <button type="button" class="icon-button nav-toggle" aria-label="Show the chats" onClick=${onMenu}>
      <${Icon} name="menu" /></button>
    ${
      session && renaming
        ? html`<${RenameForm} title=${session.title || ""} label="Chat title"
          onDone=${(/** @type {string | null} */ value) => {
            setRenaming(false);
            if (value !== null) actions.rename(session.id, value);
          }} />`
        : html`<h1 class="chat-title">${sessionId ? titleOf(session) : temporary ? "New temporary chat" : "New chat"}
      ${isPending(session) && html`<${Spinner} label="Generating the title" />`}</h1>`
    }
    ${(session?.temporary || (!sessionId && temporary)) && html`<span class="badge">Temporary</span>`}
    <${ModelPicker} />
    <${Gauge} context=${context} />
    ${session && html`<${ChatMenu} session=${session} onRename=${() => setRenaming(true)} />`}
  </header>`;
}

/** @param {{ sessionId: string | null, temporary: boolean, onMenu: () => void }} props */
export function ChatView({ sessionId, temporary, onMenu }) {
  const end = useRef(/** @type {HTMLDivElement | null} */ (null));
  const key = sessionId || NEW_CHAT; // a new chat's page shows its first message's turn
  const c = conversation(key).value;
  const session = sessionId ? sessions.value.get(sessionId) : null;

  useEffect(() => {
    if (sessionId && !c.loaded) load(sessionId);
    return () => {
      if (!sessionId) leftNewChat();
    };
  }, [sessionId]);
  const pinned = useRef(true); // follow the answer unless the reader scrolled up
  useEffect(() => {
    if (pinned.current) end.current?.scrollIntoView({ block: "end" });
  }, [c.messages.length, c.turn?.text.length, c.turn?.status]);
  useEffect(() => {
    document.title = sessionId ? `${titleOf(session)} · Eonyx` : "Eonyx";
  }, [sessionId, session?.title]);
  const onScroll = (/** @type {Event} */ event) => {
    const el = /** @type {HTMLElement} */ (event.currentTarget);
    pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  };

  function onSend(/** @type {string} */ text, /** @type {File[]} */ files) {
    pinned.current = true;
    // A new chat's session is made by its first accepted message: the page goes to it then.
    const opened = (/** @type {string} */ id) => parse().name === "new" && navigate(`/c/${id}`);
    send(key, { text, files, temporary, onSession: opened });
  }

  const busy = c.turn?.status === "streaming";
  return html`<section class="chat" aria-label="Chat">
    <${ChatHead} sessionId=${sessionId} temporary=${temporary} context=${c.context} onMenu=${onMenu} />
    <div class="chat-scroll" onScroll=${onScroll}>
      ${
        !sessionId &&
        html`<div class="welcome"><h2>How can I help?</h2>
        <p class="muted">${temporary ? "This chat is temporary: it is not listed and leaves no memory." : "Ask anything. Attach images by picking, pasting or dropping them."}</p></div>`
      }
      ${c.error && html`<p class="error" role="alert">This chat could not be opened: ${c.error.message}</p>`}
      ${sessionId && !c.loaded && !c.error && html`<p class="muted"><${Spinner} /> Loading the chat…</p>`}
      ${(sessionId || c.turn) && html`<${Transcript} sessionId=${key} c=${c} temporary=${Boolean(session?.temporary || (!sessionId && temporary))} />`}
      <div ref=${end}></div>
    </div>
    <${Composer} busy=${busy} disabled=${Boolean(c.error)}
      returned=${c.turn?.status === "refused" ? c.turn.returned : null}
      onSend=${onSend} onStop=${() => stop(key)} />
  </section>`;
}
