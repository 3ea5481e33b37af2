// @ts-check
// What the chat menus do, each against the API, keeping the state's lists right.
import { api, errorOf, PREFIX } from "./api.js";
import { navigate, parse } from "./router.js";
import { reload } from "./lists.js";
import { forget, sessions, upsert } from "./state.js";
import { toast } from "./toast.js";
import { download } from "./util.js";

/**
 * Run `work`; when it fails, say so in a toast (`failure`: what could not be done) and give null.
 * @template T
 * @param {() => Promise<T>} work
 * @param {string} failure
 * @returns {Promise<T | null>}
 */
async function attempt(work, failure) {
  try {
    return await work();
  } catch (error) {
    toast(`${failure}: ${error.message}`, { error: true });
    return null;
  }
}

export const rename = (/** @type {string} */ id, /** @type {string} */ title) =>
  attempt(async () => upsert(await api.patch(`/sessions/${id}`, { title })), "Could not rename");

export const setPinned = (/** @type {string} */ id, /** @type {boolean} */ pinned) =>
  attempt(async () => upsert(await api.patch(`/sessions/${id}`, { pinned })), "Could not pin");

export const setArchived = (/** @type {string} */ id, /** @type {boolean} */ archived) =>
  attempt(async () => {
    upsert(await api.patch(`/sessions/${id}`, { archived }));
    toast(archived ? "Chat archived." : "Chat unarchived.");
  }, "Could not archive");

export const moveTo = (/** @type {string} */ id, /** @type {string | null} */ folderId) =>
  attempt(async () => upsert(await api.patch(`/sessions/${id}`, { folder_id: folderId })), "Could not move");

export const fork = (/** @type {string} */ id) =>
  attempt(async () => {
    const copy = upsert(await api.post(`/sessions/${id}/fork`, {}));
    navigate(`/c/${copy.id}`);
    toast("Forked: this is the copy.");
  }, "Could not fork");

/** Download the chat: the .zip bundle, or Markdown (`eonyx-<id>.md`, what the console's
 * /export writes: the server's one exporter). */
export const exportAs = (/** @type {string} */ id, /** @type {"zip" | "markdown"} */ format) =>
  attempt(async () => {
    const response = await fetch(`${PREFIX}/sessions/${id}/export?format=${format}`, { credentials: "same-origin" });
    if (!response.ok) throw await errorOf(response);
    download(await response.blob(), `eonyx-${id}.${format === "zip" ? "zip" : "md"}`);
  }, "Could not export");

export const exportZip = (/** @type {string} */ id) => exportAs(id, "zip");

export const trash = (/** @type {string} */ id) =>
  attempt(async () => {
    await api.del(`/sessions/${id}`);
    const session = sessions.peek().get(id);
    forget(id);
    if (parse().id === id) navigate("/");
    toast(`“${session?.title || "Chat"}” moved to the trash.`, {
      action: { label: "Undo", run: () => restore(id) },
      ms: 10_000,
    });
  }, "Could not delete");

export const restore = (/** @type {string} */ id) =>
  attempt(async () => {
    forget(id);
    upsert(await api.post(`/sessions/${id}/restore`));
  }, "Could not restore");

export const purge = (/** @type {string} */ id) =>
  attempt(async () => {
    await api.del(`/sessions/${id}?purge=true`);
    forget(id);
  }, "Could not delete for good");

/** Import a bundle: the new chat goes into the list and opens. Throws the server's reason. */
export async function importBundle(/** @type {File} */ file) {
  const form = new FormData();
  form.append("file", file, file.name);
  const body = await api.post("/sessions/import", form);
  await reload("chats");
  upsert(body.session);
  navigate(`/c/${body.session.id}`);
  return body.session;
}
