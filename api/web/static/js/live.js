// Live events over /api/v1/events (titles, likes, memory writes). When the socket cannot
// connect or drops, the titles still resolve: a periodic list refresh runs while any title
// is pending, until the socket is back.
import { api } from "./api.js";
import { emit, isPending, state, upsert, PAGE } from "./store.js";

const POLL_MS = 2000;
const ENDED = new Set(["invalid_token", "account_disabled", "missing_token"]);
const listeners = new Map(); // type -> Set(fn)
let socket = null;
let retry = 1000;
let retryTimer = null;
let pollTimer = null;
let stopped = true;

/** Listen to one event type ("like.updated", "memory.updated"...); returns the unsubscribe. */
export function onEvent(type, fn) {
  if (!listeners.has(type)) listeners.set(type, new Set());
  listeners.get(type).add(fn);
  return () => listeners.get(type).delete(fn);
}

function dispatch(event) {
  if (event.type === "session.title" && event.session_id) {
    state.awaiting.delete(event.session_id);
    if (!event.title_pending) state.resolved.add(event.session_id);
    if (state.sessions.has(event.session_id)) {
      upsert({ id: event.session_id, title: event.title, title_pending: false });
    }
  }
  for (const fn of listeners.get(event.type) || []) fn(event);
}

function setLive(value) {
  state.live = value;
  emit();
  schedulePoll();
}

export function connect() {
  stopped = false;
  clearTimeout(retryTimer);
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  let ws;
  try {
    ws = new WebSocket(`${scheme}//${location.host}/api/v1/events`);
  } catch {
    setLive("down");
    return reconnectLater();
  }
  socket = ws;
  ws.onmessage = (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    if (event.type === "ready") {
      retry = 1000;
      setLive("open");
      resync(); // what was pushed while the socket was down is not pushed again
    } else if (event.type === "error") {
      setLive("down");
      // The server closes the socket the moment its sign-in ends (signed out elsewhere, a
      // password changed, the account disabled): ask the API, whose 401 signs this page out.
      if (ENDED.has(event.error?.code)) api.get("/users/me").catch(() => {});
    } else dispatch(event);
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    setLive("down");
    reconnectLater();
  };
  ws.onerror = () => {}; // onclose follows and says what to do
}

function reconnectLater() {
  if (stopped) return;
  retryTimer = setTimeout(connect, retry);
  retry = Math.min(retry * 2, 30_000);
}

export function disconnect() {
  stopped = true;
  clearTimeout(retryTimer);
  clearTimeout(pollTimer);
  pollTimer = null;
  const ws = socket;
  socket = null;
  if (ws) ws.close();
}

/** The fallback: while the socket is not open and a title is pending, refresh the list. */
export function schedulePoll() {
  if (pollTimer || stopped || state.live === "open") return;
  pollTimer = setTimeout(poll, POLL_MS);
}

async function poll() {
  pollTimer = null;
  if (stopped || state.live === "open") return;
  const pending = [...state.sessions.values()].filter(isPending);
  if (!pending.length) return;
  try {
    const page = await api.get(`/sessions?folder_id=none&limit=${PAGE}`);
    const seen = new Set();
    for (const item of page.items) {
      if (state.sessions.has(item.id)) upsert(item);
      seen.add(item.id);
    }
    for (const session of pending) {
      if (seen.has(session.id)) continue;
      try {
        upsert(await api.get(`/sessions/${session.id}`));
      } catch (error) {
        if (error.status === 404) state.awaiting.delete(session.id);
      }
    }
    for (const session of pending) {
      const now = state.sessions.get(session.id);
      if (now && !now.title_pending && !activeTurns.has(session.id)) state.awaiting.delete(session.id);
    }
    emit();
  } catch {
    /* try again at the next tick */
  }
  schedulePoll();
}

/** Read the pending titles once (after a (re)connect: their event may have come before). */
async function resync() {
  for (const session of [...state.sessions.values()].filter(isPending)) {
    if (activeTurns.has(session.id)) continue;
    try {
      upsert(await api.get(`/sessions/${session.id}`));
    } catch {
      /* gone, or the next event says */
    }
  }
}

// Sessions whose turn is streaming: their spinner is the turn's to end.
export const activeTurns = new Set();
