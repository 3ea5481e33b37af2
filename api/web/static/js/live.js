// @ts-check
// Live events over /api/v1/events (titles, likes, memory writes). When the socket cannot
// connect or drops, the titles still resolve: a periodic list refresh runs while any title
// is pending, until the socket is back.
import { api } from "./api.js";
import { PAGE } from "./lists.js";
import { isStreaming, live, pendingTitles, sessions, titlePushed, titleSettled, upsert } from "./state.js";

const POLL_MS = 2000;
const ENDED = new Set(["invalid_token", "account_disabled", "missing_token"]);
/**
 * A live event as the socket sends it (events.d.ts, generated from the OpenAPI document).
 * @typedef {import("./events.js").LiveEvent} LiveEvent
 * @typedef {(event: LiveEvent) => void} Listener
 */

/** @type {Map<string, Set<Listener>>} */
const listeners = new Map(); // type -> Set(fn)
/** @type {WebSocket | null} */
let socket = null;
let retry = 1000;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let retryTimer;
/** @type {ReturnType<typeof setTimeout> | null} */
let pollTimer = null;
let stopped = true;

/**
 * Listen to one event type ("like.updated", "memory.updated"...); returns the unsubscribe.
 * @template {LiveEvent["type"]} T
 * @param {T} type
 * @param {(event: Extract<LiveEvent, { type: T }>) => void} fn
 */
export function onEvent(type, fn) {
  const listener = /** @type {Listener} */ (/** @type {unknown} */ (fn));
  const set = listeners.get(type) || new Set();
  listeners.set(type, set.add(listener));
  return () => set.delete(listener);
}

function dispatch(/** @type {LiveEvent} */ event) {
  if (event.type === "session.title" && event.session_id) titlePushed(event);
  for (const fn of listeners.get(event.type) || []) fn(event);
}

function setLive(/** @type {"connecting" | "open" | "down"} */ value) {
  live.value = value;
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
    /** @type {LiveEvent} */
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
      // Too many tabs open: this one polls, and tries for a live connection only rarely.
      if (event.error?.code === "too_many_sockets") retry = 30_000;
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
  if (pollTimer) clearTimeout(pollTimer);
  pollTimer = null;
  const ws = socket;
  socket = null;
  if (ws) ws.close();
}

/** The fallback: while the socket is not open and a title is pending, refresh the list. */
export function schedulePoll() {
  if (pollTimer || stopped || live.peek() === "open") return;
  pollTimer = setTimeout(poll, POLL_MS);
}

async function poll() {
  pollTimer = null;
  if (stopped || live.peek() === "open") return;
  const pending = pendingSessions();
  if (!pending.length) return;
  try {
    const page = await api.get(`/sessions?folder_id=none&limit=${PAGE}`);
    const seen = new Set();
    for (const item of page.items) {
      if (sessions.peek().has(item.id)) upsert(item);
      seen.add(item.id);
    }
    for (const id of pending) {
      if (seen.has(id)) continue;
      try {
        upsert(await api.get(`/sessions/${id}`));
      } catch (error) {
        if (error.status === 404) titleSettled(id);
      }
    }
    for (const id of pending) {
      const now = sessions.peek().get(id);
      if (now && !now.title_pending && !isStreaming(id)) titleSettled(id);
    }
  } catch {
    /* try again at the next tick */
  }
  schedulePoll();
}

/** Read the pending titles once (after a (re)connect: their event may have come before). */
async function resync() {
  for (const id of pendingSessions()) {
    if (isStreaming(id)) continue;
    try {
      upsert(await api.get(`/sessions/${id}`));
    } catch {
      /* gone, or the next event says */
    }
  }
}

/** The listed chats whose title is pending. */
const pendingSessions = () => [...pendingTitles.peek()].filter((id) => sessions.peek().has(id));
