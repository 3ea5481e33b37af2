// @ts-check
// What the sidebar shows, loaded from the API into the state (state.js): the lists of chats
// page by page, the folders and their palette, and this device's collapse state.
import { api } from "./api.js";
import { addPage, dropList, folders, listEntry, lists, palette, ui } from "./state.js";
import { deviceId } from "./util.js";

export const PAGE = 50;

/**
 * The API's query for a list.
 * @returns {Record<string, string>}
 */
function params(/** @type {string} */ key) {
  if (key === "chats") return { folder_id: "none" };
  if (key.startsWith("folder:")) return { folder_id: key.slice(7) };
  if (key === "trash") return { trash: "true" };
  if (key === "archived") return { archived: "true" };
  if (key.startsWith("search:")) return { q: key.slice(7) };
  throw new Error(`unknown list ${key}`);
}

/** The next page of a list (no-op while one is loading or when all are in). */
export async function loadMore(/** @type {string} */ key) {
  const entry = listEntry(key);
  const current = entry.value;
  if (current.loading || current.done) return;
  entry.value = { ...current, loading: true, error: null };
  const query = new URLSearchParams({ ...params(key), limit: String(PAGE) });
  if (current.cursor) query.set("cursor", current.cursor);
  try {
    /** @type {{ items: import("./state.js").Session[], next_cursor: string | null }} */
    const page = await api.get(`/sessions?${query}`);
    if (lists.value.get(key) !== entry) return; // dropped meanwhile (reset, new search)
    addPage(entry, page);
  } catch (error) {
    entry.value = { ...entry.value, error: error instanceof Error ? error.message : String(error) };
  } finally {
    entry.value = { ...entry.value, loading: false };
  }
}

/** Reload a list from its first page (after an import, a restore...). */
export async function reload(/** @type {string} */ key) {
  dropList(key);
  await loadMore(key);
}

export { dropList };

export async function loadFolders() {
  /** @type {{ items: import("./state.js").Folder[], palette: import("./state.js").Color[] }} */
  const body = await api.get("/folders");
  folders.value = body.items;
  palette.value = body.palette;
}

export async function loadUiState() {
  try {
    ui.value = await api.get(`/devices/${deviceId()}/ui-state`);
  } catch {
    /* the defaults: sections open, folders closed */
  }
}

/**
 * Open or close a sidebar section ("section") or a folder ("folder"), kept per device.
 * @param {"section" | "folder"} kind
 * @param {string} key
 * @param {boolean} collapsed
 */
export async function setCollapsed(kind, key, collapsed) {
  const field = kind === "section" ? "sections_collapsed" : "folders_collapsed";
  ui.value = { ...ui.value, [field]: { ...ui.value[field], [key]: collapsed } };
  try {
    await api.put(`/devices/${deviceId()}/ui-state`, { [field]: { [key]: collapsed } });
  } catch {
    /* kept for this page; the next load shows what the server has */
  }
}
