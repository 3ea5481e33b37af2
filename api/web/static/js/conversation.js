// Each open conversation's messages, context gauge and running turn, kept outside the
// components: a turn keeps streaming when the view changes (a new chat gets its id and URL
// mid-turn), and the view shows it again when it comes back.
import { api, csrfHeader, errorOf, PREFIX } from "./api.js";
import { activeTurns, onEvent, schedulePoll } from "./live.js";
import { useEffect, useReducer } from "../vendor/preact.js";
import { emit, state, upsert } from "./store.js";

const conversations = new Map();
const listeners = new Set();
let queued = false;

/** Re-render the chat view (not the sidebar: a streamed token changes nothing there). */
function changed() {
  if (queued) return;
  queued = true;
  queueMicrotask(() => {
    queued = false;
    for (const listener of listeners) listener();
  });
}

export function useConversations() {
  const [, force] = useReducer((n) => n + 1, 0);
  useEffect(() => {
    listeners.add(force);
    return () => listeners.delete(force);
  }, []);
}

export function conversation(id) {
  if (!conversations.has(id)) {
    conversations.set(id, { messages: [], loaded: false, error: null, context: null, turn: null });
  }
  return conversations.get(id);
}

export async function load(id) {
  const c = conversation(id);
  try {
    const [session, messages, context] = await Promise.all([
      api.get(`/sessions/${id}`),
      api.get(`/sessions/${id}/messages`),
      api.get(`/sessions/${id}/context`).catch(() => null),
    ]);
    upsert(session);
    if (!c.turn || c.turn.status !== "streaming") c.messages = messages.items;
    c.context = context;
    c.loaded = true;
    c.error = null;
  } catch (error) {
    c.error = error;
  }
  changed();
}

/** Create the session a first message goes to (listed at once, its title spinner on). */
export async function createSession(temporary) {
  const session = await api.post("/sessions", { temporary });
  if (!temporary) state.awaiting.add(session.id);
  upsert(session);
  conversation(session.id).loaded = true;
  return session;
}

async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) yield { name, data: JSON.parse(data.join("\n")) };
    }
  }
}

/** Send a message (text and image files), or `retry` the last unanswered one; streamed. */
export async function send(id, { text = "", files = [], retry = false }) {
  const c = conversation(id);
  const controller = new AbortController();
  const local = retry
    ? null
    : {
        id: `local-${Date.now()}`,
        role: "user",
        content: text,
        local: true,
        previews: files.map((f) => URL.createObjectURL(f)),
      };
  const turn = { status: "streaming", text: "", steps: [], memory: [], error: null, controller, local };
  c.turn = turn;
  activeTurns.add(id);
  changed();

  const form = new FormData();
  if (!retry) form.append("content", text);
  form.append("stream", "true");
  if (retry) form.append("retry", "true");
  for (const file of files) form.append("images", file, file.name);
  try {
    const response = await fetch(`${PREFIX}/sessions/${id}/turns`, {
      method: "POST",
      body: form,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream", ...csrfHeader() },
      signal: controller.signal,
    });
    if (!response.ok) throw await errorOf(response);
    for await (const event of events(response)) {
      if (event.name === "token") turn.text += event.data.text;
      else if (event.name === "tool_call") turn.steps.push({ call: event.data, result: null });
      else if (event.name === "tool_result") {
        const step = turn.steps.find((s) => s.call.id === event.data.tool_call_id);
        if (step) step.result = event.data;
      } else if (event.name === "memory_write") turn.memory.push(event.data);
      else if (event.name === "done") {
        const result = event.data;
        // A retry answers the user message already shown: each message once.
        const fresh = [result.user_message, ...result.steps, result.assistant_message].filter(Boolean);
        const ids = new Set(fresh.map((m) => m.id));
        c.messages = [...c.messages.filter((m) => !ids.has(m.id)), ...fresh];
        c.context = result.context;
        c.notices = (c.notices || new Map()).set(result.assistant_message.id, result.memory_writes || turn.memory);
        turn.status = "done";
      } else if (event.name === "error") {
        turn.status = "error";
        turn.error = { message: event.data.error?.message || "the turn failed", status: event.data.status };
      }
      changed();
    }
    if (turn.status === "streaming") {
      turn.status = "error";
      turn.error = { message: "the answer was cut off", status: 0 };
    }
  } catch (error) {
    if (error.name === "AbortError") turn.status = "stopped";
    else {
      turn.status = "error";
      turn.error = { message: error.message, status: error.status || 0 };
    }
  } finally {
    for (const url of local?.previews || []) setTimeout(() => URL.revokeObjectURL(url), 60_000);
    activeTurns.delete(id);
    if (turn.status !== "done") await reloadAfterFailure(id, turn);
    await settleTitle(id);
    changed();
  }
}

/** After an error or a stop: what the server saved (the user message stays saved). */
async function reloadAfterFailure(id, turn) {
  const c = conversation(id);
  try {
    const messages = await api.get(`/sessions/${id}/messages`);
    c.messages = messages.items;
    turn.local = null;
  } catch {
    /* keep the local copy */
  }
}

/** The turn ended (answered, failed, stopped): the list learns the title the session has.
 * A title the server still generates comes over the socket, or the fallback poll. */
async function settleTitle(id) {
  try {
    upsert(await api.get(`/sessions/${id}`));
  } catch {
    /* gone meanwhile */
  }
  state.awaiting.delete(id);
  emit(); // the sidebar's spinner
  schedulePoll();
}

export function stop(id) {
  conversation(id).turn?.controller.abort();
}

// ------------------------------------------------------------------ likes

function applyLike(id, messageIds, like) {
  const c = conversation(id);
  c.messages = c.messages.map((m) => (messageIds.includes(m.id) ? { ...m, like } : m));
  changed();
}

// An answer about likes is older than any like event that came while it was on its way, so
// it must not undo that event (a "saving" read after "saved" was pushed would spin forever).
let likeEvents = 0;
const likeEventAt = new Map(); // message id -> the number of the last event about it

function unchangedSince(messageId, asked) {
  return (likeEventAt.get(messageId) || 0) <= asked;
}

export async function like(id, message, liked) {
  if (liked) {
    applyLike(id, [message.id], { status: "saving" });
    try {
      const asked = likeEvents;
      const body = await api.post(`/sessions/${id}/messages/${message.id}/like`);
      const ids = body.message_ids.filter((m) => unchangedSince(m, asked));
      applyLike(id, ids, { status: body.status, detail: body.detail, pair_id: body.pair_id });
      // The job may have finished, and its event come, before this answer: ask once more.
      if (body.status === "saving") await refreshLikes(id);
      pollLikes(id);
    } catch (error) {
      applyLike(id, [message.id], { status: "failed", detail: error.message });
    }
  } else {
    const pair = message.like?.pair_id;
    const ids = conversation(id)
      .messages.filter((m) => m.id === message.id || (pair && m.like?.pair_id === pair))
      .map((m) => m.id);
    try {
      await api.del(`/sessions/${id}/messages/${message.id}/like`);
      applyLike(id, ids, null);
    } catch (error) {
      applyLike(id, [message.id], { ...message.like, detail: `could not remove the like: ${error.message}` });
    }
  }
}

onEvent("like.updated", (event) => {
  likeEvents += 1;
  for (const messageId of event.message_ids || []) likeEventAt.set(messageId, likeEvents);
  if (!conversations.has(event.session_id)) return;
  applyLike(event.session_id, event.message_ids || [], {
    status: event.status,
    detail: event.detail,
    pair_id: event.pair_id,
  });
});

/** The likes as the server has them (the messages themselves stay as shown). */
async function refreshLikes(id) {
  const c = conversation(id);
  const asked = likeEvents;
  try {
    const body = await api.get(`/sessions/${id}/messages`);
    const likes = new Map(body.items.map((m) => [m.id, m.like || null]));
    const fresh = (m) => likes.has(m.id) && unchangedSince(m.id, asked);
    c.messages = c.messages.map((m) => (fresh(m) ? { ...m, like: likes.get(m.id) } : m));
    changed();
  } catch {
    /* the next event or poll */
  }
}

/** Without the socket, a saving like is polled until it settles. */
function pollLikes(id) {
  const tick = async () => {
    if (state.live === "open") return;
    if (!conversation(id).messages.some((m) => m.like?.status === "saving")) return;
    await refreshLikes(id);
    setTimeout(tick, 2000);
  };
  setTimeout(tick, 2000);
}
