// The client's state: the sessions it has seen (by id), the lists that show them (loaded page
// by page, in the server's order), folders, this device's collapse state, and the live
// channel. Components read it with useStore() and re-render when it changes.
import { useEffect, useReducer } from "../vendor/preact.js";
import { api } from "./api.js";
import { deviceId } from "./util.js";

export const PAGE = 50;

export const state = {
  user: null,
  sessions: new Map(),
  lists: {}, // key -> {ids, cursor, done, loading, error}
  folders: [],
  palette: [],
  ui: { sections_collapsed: {}, folders_collapsed: {} },
  awaiting: new Set(), // sessions whose first reply is under way: the title spinner shows
  live: "connecting", // the events socket: connecting, open or down (then: polling)
};

const listeners = new Set();
let queued = false;

/** Re-render the subscribers (once per microtask, however many changes came). */
export function emit() {
  if (queued) return;
  queued = true;
  queueMicrotask(() => {
    queued = false;
    for (const listener of listeners) listener();
  });
}

export function useStore() {
  const [, force] = useReducer((n) => n + 1, 0);
  useEffect(() => {
    listeners.add(force);
    return () => listeners.delete(force);
  }, []);
  return state;
}

export function reset() {
  state.sessions = new Map();
  state.lists = {};
  state.folders = [];
  state.awaiting = new Set();
  emit();
}

// ---------------------------------------------------------------- sessions and lists

const sortKey = (s) => [s.pinned ? 1 : 0, s.updated_at || ""];
function before(a, b) {
  const [pa, ua] = sortKey(a);
  const [pb, ub] = sortKey(b);
  return pa !== pb ? pa > pb : ua > ub;
}

/** Whether a session belongs in a list (for lists the client keeps up to date itself). */
function belongs(key, s) {
  if (s.temporary) return false;
  if (key === "trash") return Boolean(s.deleted_at);
  if (s.deleted_at) return false;
  if (key === "archived") return Boolean(s.archived);
  if (s.archived) return false;
  if (key === "chats") return !s.folder_id;
  if (key.startsWith("folder:")) return s.folder_id === key.slice(7);
  return null; // search results: left as the server gave them
}

function params(key) {
  if (key === "chats") return { folder_id: "none" };
  if (key.startsWith("folder:")) return { folder_id: key.slice(7) };
  if (key === "trash") return { trash: "true" };
  if (key === "archived") return { archived: "true" };
  if (key.startsWith("search:")) return { q: key.slice(7) };
  throw new Error(`unknown list ${key}`);
}

export const isPending = (s) => Boolean(s && (s.title_pending || state.awaiting.has(s.id)));

/** Take in what the server says of a session and keep every loaded list right. */
export function upsert(session) {
  const merged = { ...state.sessions.get(session.id), ...session };
  state.sessions.set(session.id, merged);
  for (const [key, list] of Object.entries(state.lists)) {
    const fits = belongs(key, merged);
    if (fits === null) continue;
    const at = list.ids.indexOf(merged.id);
    if (at >= 0) list.ids.splice(at, 1);
    if (!fits) continue;
    let index = list.ids.findIndex((id) => before(merged, state.sessions.get(id)));
    if (index < 0) {
      if (!list.done) continue; // lands further down: it comes with a later page
      index = list.ids.length;
    }
    list.ids.splice(index, 0, merged.id);
  }
  emit();
  return merged;
}

export function forget(id) {
  state.sessions.delete(id);
  state.awaiting.delete(id);
  for (const list of Object.values(state.lists)) {
    const at = list.ids.indexOf(id);
    if (at >= 0) list.ids.splice(at, 1);
  }
  emit();
}

export function list(key) {
  if (!state.lists[key]) state.lists[key] = { ids: [], cursor: null, done: false, loading: false, error: null };
  return state.lists[key];
}

/** The next page of a list (no-op while one is loading or when all are in). */
export async function loadMore(key) {
  const current = list(key);
  if (current.loading || current.done) return;
  current.loading = true;
  current.error = null;
  emit();
  const query = new URLSearchParams({ ...params(key), limit: String(PAGE) });
  if (current.cursor) query.set("cursor", current.cursor);
  try {
    const page = await api.get(`/sessions?${query}`);
    if (state.lists[key] !== current) return; // dropped meanwhile (reset, new search)
    for (const item of page.items) {
      state.sessions.set(item.id, { ...state.sessions.get(item.id), ...item });
      if (!current.ids.includes(item.id)) current.ids.push(item.id);
    }
    current.cursor = page.next_cursor;
    current.done = !page.next_cursor;
  } catch (error) {
    current.error = error.message;
  } finally {
    current.loading = false;
    emit();
  }
}

export function dropList(key) {
  delete state.lists[key];
  emit();
}

/** Reload a list from its first page (after an import, a restore...). */
export async function reload(key) {
  delete state.lists[key];
  await loadMore(key);
}

// ---------------------------------------------------------------- folders and device state

export async function loadFolders() {
  const body = await api.get("/folders");
  state.folders = body.items;
  state.palette = body.palette;
  emit();
}

export async function loadUiState() {
  try {
    state.ui = await api.get(`/devices/${deviceId()}/ui-state`);
  } catch {
    /* the defaults: sections open, folders closed */
  }
  emit();
}

export const sectionCollapsed = (name) => Boolean(state.ui.sections_collapsed?.[name]);
export const folderCollapsed = (id) => state.ui.folders_collapsed?.[id] ?? true;

export async function setCollapsed(kind, key, collapsed) {
  const field = kind === "section" ? "sections_collapsed" : "folders_collapsed";
  state.ui = { ...state.ui, [field]: { ...state.ui[field], [key]: collapsed } };
  emit();
  try {
    await api.put(`/devices/${deviceId()}/ui-state`, { [field]: { [key]: collapsed } });
  } catch {
    /* kept for this page; the next load shows what the server has */
  }
}
