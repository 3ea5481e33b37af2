// @ts-check
// The web client's state, in one place, as signals: the chats it has seen (by id), the lists
// that show them (page by page, in the server's order), folders, this device's collapse
// state, the live channel and the open conversations. What follows from them is `computed`
// here and nowhere else: which titles are pending, and each message's like.
//
// Components read `.value` while they render and render again when what they read changes.
// Other modules change the state through the functions below, which keep the lists in order.
// Values are replaced, never changed in place: a chat that did not change keeps its object,
// so a row of the sidebar that shows it is not drawn again.
import { batch, computed, signal } from "../vendor/preact.js";

/**
 * A signal as this client uses it (`signal()` from static/vendor/preact.js).
 * @template T
 * @typedef {{ value: T, peek(): T }} Signal
 */
/**
 * A `computed()`: read only.
 * @template T
 * @typedef {{ readonly value: T, peek(): T }} Computed
 */

/**
 * A chat as the server describes it (GET /sessions/<id>, a list's items).
 * @typedef {object} Session
 * @property {string} id
 * @property {string | null} [title]
 * @property {boolean} [title_pending] the title job has not answered yet
 * @property {boolean} [pinned]
 * @property {boolean} [archived]
 * @property {boolean} [temporary]
 * @property {string | null} [deleted_at]
 * @property {string | null} [folder_id]
 * @property {string} [updated_at]
 * @property {string} [source] "api", "teams", "mcp" or the web's
 * @property {number} [message_count]
 * @property {number} [image_count]
 * @property {string | null} [forked_from] the chat a fork was copied from
 * @property {"bundle" | "shared" | null} [imported] how an imported chat came
 * @property {{ text: string, highlights?: [number, number][] }} [snippet] a search hit's
 */

/**
 * A list of chats as loaded so far: the ids in the server's order, and the next page's cursor.
 * @typedef {{ ids: string[], cursor: string | null, done: boolean, loading: boolean, error: string | null }} List
 */

/** @typedef {{ id: string, name: string, color: string }} Folder */
/** @typedef {{ name: string, hex: string }} Color */
/** @typedef {{ sections_collapsed: Record<string, boolean>, folders_collapsed: Record<string, boolean> }} UiState */

/**
 * A message's like: saving (the job runs), saved or failed; null when it is not liked.
 * @typedef {{ status: string | null, detail?: string | null, pair_id?: string } | null} Like
 */

/**
 * A transcript's message (user, assistant, tool), or the page's copy of one being sent.
 * @typedef {object} Message
 * @property {string} id
 * @property {string} role
 * @property {string} [name] "mcp" on a note a coding agent left (a user message no answer follows)
 * @property {unknown} [content]
 * @property {Like} [like] as the transcript was read (`likeOf` says what holds now)
 * @property {string[]} [images]
 * @property {string[]} [previews] blob: URLs of the images of a message being sent
 * @property {boolean} [local] shown before the server has it
 * @property {{ id: string, function?: { name: string, arguments?: string } }[]} [tool_calls]
 * @property {string} [tool_call_id]
 */

/**
 * The answer under way (or how it ended): streamed text, tool steps, memory writes.
 * @typedef {object} Turn
 * @property {"streaming" | "done" | "error" | "stopped" | "refused"} status "refused": nothing
 *   was saved (the server refused the message, or never got it): it goes back to the composer
 * @property {string} text
 * @property {{ call: { id: string, function?: { name: string, arguments?: string } }, result: Message | null }[]} steps
 * @property {{ file?: string, action?: string }[]} memory
 * @property {{ message: string, status: number } | null} error
 * @property {AbortController} controller
 * @property {Message | null} local the user message as sent, until the server's copy
 * @property {{ text: string, files: File[] } | null} [returned] a refused message, for the composer
 */

/**
 * An open conversation: kept while the page lives, so a turn streams on when the view changes.
 * @typedef {object} Conversation
 * @property {Message[]} messages
 * @property {boolean} loaded
 * @property {Error | null} error
 * @property {{ percent: number | null, tokens: number, window: number } | null} context
 * @property {Turn | null} turn
 * @property {Map<string, { file?: string, action?: string }[]>} notices memory writes by answer
 */

/** The events socket: connecting, open, or down (the lists are polled then). */
/** @type {Signal<"connecting" | "open" | "down">} */
export const live = signal(/** @type {"connecting" | "open" | "down"} */ ("connecting"));
/** @type {Signal<Map<string, Session>>} */
export const sessions = signal(new Map());
/** Each list under its key ("chats", "folder:<id>", "trash", "archived", "search:<q>").
 * @type {Signal<Map<string, Signal<List>>>} */
export const lists = signal(new Map());
/** @type {Signal<Folder[]>} */
export const folders = signal([]);
/** @type {Signal<Color[]>} */
export const palette = signal([]);
/** @type {Signal<UiState>} */
export const ui = signal({ sections_collapsed: {}, folders_collapsed: {} });

/** Forget everything of the signed-in user (signed out). */
export function reset() {
  batch(() => {
    sessions.value = new Map();
    lists.value = new Map();
    folders.value = [];
    palette.value = [];
    opening.value = new Set();
    titled.value = new Set();
    likeNotes.value = new Map();
  });
  conversations.clear();
}

// ---------------------------------------------------------------- titles

/** Chats this page created whose first turn has not ended: the spinner shows from the start,
 * before the server says anything of the title. @type {Signal<Set<string>>} */
const opening = signal(new Set());
/** Chats whose title was pushed: pending no more, whatever an older read says.
 * @type {Signal<Set<string>>} */
const titled = signal(new Set());

/** The chats whose title is pending: the one answer to "does this row spin".
 * @type {Computed<Set<string>>} */
export const pendingTitles = computed(() => {
  const pushed = titled.value;
  /** @type {Set<string>} */
  const pending = new Set();
  for (const session of sessions.value.values()) {
    if (session.title_pending && !pushed.has(session.id)) pending.add(session.id);
  }
  for (const id of opening.value) if (!pushed.has(id)) pending.add(id);
  return pending;
});

/** @param {Session | null | undefined} session */
export const isPending = (session) => Boolean(session && pendingTitles.value.has(session.id));

/** A chat created here for a first message: its spinner shows until the turn ends. */
export function titleOpening(/** @type {string} */ id) {
  opening.value = new Set(opening.value).add(id);
}

/** The first turn ended (or the chat is gone): the server's word decides from now on. */
export function titleSettled(/** @type {string} */ id) {
  if (!opening.value.has(id)) return;
  const next = new Set(opening.value);
  next.delete(id);
  opening.value = next;
}

/** A `session.title` event: the title the chat keeps. */
export function titlePushed(/** @type {import("./events.js").SessionTitleEvent} */ event) {
  batch(() => {
    titleSettled(event.session_id);
    if (!event.title_pending) titled.value = new Set(titled.value).add(event.session_id);
    if (sessions.value.has(event.session_id)) {
      upsert({ id: event.session_id, title: event.title, title_pending: false });
    }
  });
}

// ---------------------------------------------------------------- chats and lists

/** @param {Session} s */
const sortKey = (s) => [s.pinned ? 1 : 0, s.updated_at || ""];
/** Whether `a` is listed above `b` (pinned first, then the most recently updated). */
function before(/** @type {Session} */ a, /** @type {Session | undefined} */ b) {
  if (!b) return true;
  const [pa, ua] = sortKey(a);
  const [pb, ub] = sortKey(b);
  return pa !== pb ? pa > pb : ua > ub;
}

/**
 * Whether a chat belongs in a list (for the lists the client keeps in order itself); null
 * for search results, left as the server gave them.
 * @returns {boolean | null}
 */
function belongs(/** @type {string} */ key, /** @type {Session} */ s) {
  if (s.temporary) return false;
  if (key === "trash") return Boolean(s.deleted_at);
  if (s.deleted_at) return false;
  if (key === "archived") return Boolean(s.archived);
  if (s.archived) return false;
  if (key === "chats") return !s.folder_id;
  if (key.startsWith("folder:")) return s.folder_id === key.slice(7);
  return null;
}

/** What the server says of a chat, over what the page knew of it. A read that still says
 * the title is pending after the title was pushed is older than the push: its title is not
 * taken. */
function merge(/** @type {Session} */ session) {
  const known = sessions.value.get(session.id);
  if (session.title_pending && titled.value.has(session.id)) {
    session = { ...session, title_pending: false, title: known?.title ?? session.title };
  }
  return { ...known, ...session };
}

/** Ids without `id`, then with it where it sorts (a list not loaded that far leaves it out). */
function placed(/** @type {List} */ list, /** @type {Session} */ session, /** @type {boolean} */ fits) {
  const ids = list.ids.filter((id) => id !== session.id);
  if (fits) {
    let index = ids.findIndex((id) => before(session, sessions.value.get(id)));
    if (index < 0 && list.done) index = ids.length;
    if (index >= 0) ids.splice(index, 0, session.id);
  }
  return ids;
}

const same = (/** @type {string[]} */ a, /** @type {string[]} */ b) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Take in what the server says of a chat and keep every loaded list in order.
 * @param {Session} session
 * @returns {Session} the chat as the page now knows it
 */
export function upsert(session) {
  const merged = merge(session);
  batch(() => {
    sessions.value = new Map(sessions.value).set(merged.id, merged);
    for (const [key, entry] of lists.value) {
      const fits = belongs(key, merged);
      if (fits === null) continue;
      const ids = placed(entry.value, merged, fits);
      if (!same(ids, entry.value.ids)) entry.value = { ...entry.value, ids };
    }
  });
  return merged;
}

/** A chat gone from this page (deleted, purged, restored to be listed again). */
export function forget(/** @type {string} */ id) {
  batch(() => {
    const next = new Map(sessions.value);
    next.delete(id);
    sessions.value = next;
    titleSettled(id);
    for (const entry of lists.value.values()) {
      if (entry.value.ids.includes(id)) entry.value = { ...entry.value, ids: entry.value.ids.filter((x) => x !== id) };
    }
  });
}

/** The chats of a deleted folder, unfiled (the server keeps them), and its list dropped. */
export function unfile(/** @type {string} */ folderId) {
  batch(() => {
    const next = new Map(sessions.value);
    for (const s of next.values()) if (s.folder_id === folderId) next.set(s.id, { ...s, folder_id: null });
    sessions.value = next;
    dropList(`folder:${folderId}`);
  });
}

/** @type {List} */
const EMPTY = Object.freeze({ ids: [], cursor: null, done: false, loading: false, error: null });

/** A list as loaded so far (empty when it never was): for rendering. */
export function listOf(/** @type {string} */ key) {
  return lists.value.get(key)?.value ?? EMPTY;
}

/** The list's own signal, made when it is first loaded. A loader holds it: when the key no
 * longer names it (dropped, reloaded), its answer is not wanted. */
export function listEntry(/** @type {string} */ key) {
  let entry = lists.value.get(key);
  if (!entry) {
    /** @type {Signal<List>} */
    const made = signal({ ...EMPTY });
    entry = made;
    lists.value = new Map(lists.value).set(key, entry);
  }
  return entry;
}

export function dropList(/** @type {string} */ key) {
  if (!lists.value.has(key)) return;
  const next = new Map(lists.value);
  next.delete(key);
  lists.value = next;
}

/**
 * A page of a list came: its chats taken in, their ids appended.
 * @param {Signal<List>} entry
 * @param {{ items: Session[], next_cursor: string | null }} page
 */
export function addPage(entry, page) {
  batch(() => {
    const next = new Map(sessions.value);
    const ids = [...entry.value.ids];
    for (const item of page.items) {
      next.set(item.id, merge(item));
      if (!ids.includes(item.id)) ids.push(item.id);
    }
    sessions.value = next;
    entry.value = { ...entry.value, ids, cursor: page.next_cursor, done: !page.next_cursor };
  });
}

// ---------------------------------------------------------------- this device's collapse state

export const sectionCollapsed = (/** @type {string} */ name) => Boolean(ui.value.sections_collapsed?.[name]);
export const folderCollapsed = (/** @type {string} */ id) => ui.value.folders_collapsed?.[id] ?? true;

// ---------------------------------------------------------------- conversations

/** @type {Map<string, Signal<Conversation>>} */
const conversations = new Map();

/** A conversation's signal, made on first use (reading it while rendering is fine). */
export function conversation(/** @type {string} */ id) {
  let entry = conversations.get(id);
  if (!entry) {
    /** @type {Signal<Conversation>} */
    const made = signal({ messages: [], loaded: false, error: null, context: null, turn: null, notices: new Map() });
    entry = made;
    conversations.set(id, entry);
  }
  return entry;
}

/** @param {string} id @param {Partial<Conversation>} changes */
export function updateConversation(id, changes) {
  const entry = conversation(id);
  entry.value = { ...entry.value, ...changes };
}

/** Whether a chat's answer is streaming on this page (its title spinner is the turn's to end). */
export const isStreaming = (/** @type {string} */ id) => conversations.get(id)?.peek().turn?.status === "streaming";

// ---------------------------------------------------------------- likes

// What was said last of each message's like, and when on the page's clock: a read of the
// transcript counts from when it was asked, an event or this page's own change from when it
// came. The latest word wins, so a read answered after an event it did not know of cannot
// undo that event (a "saving" read after "saved" was pushed would spin for good).
let clock = 0;
/** Now, on the page's clock: take it before asking the server about likes. */
export const tick = () => ++clock;
/** @type {Signal<Map<string, { like: Like, at: number }>>} */
const likeNotes = signal(new Map());

/**
 * What was said of some messages' likes at `at` (now by default); older than what is known,
 * it is dropped.
 * @param {[string, Like][]} said message id and like
 * @param {number} [at]
 */
export function noteLikes(said, at = tick()) {
  const next = new Map(likeNotes.value);
  let changed = false;
  for (const [id, like] of said) {
    const known = next.get(id);
    if (known && known.at > at) continue;
    next.set(id, { like, at });
    changed = true;
  }
  if (changed) likeNotes.value = next;
}

/** Each message's like as it stands (message id -> like).
 * @type {Computed<Map<string, Like>>} */
export const likes = computed(() => new Map([...likeNotes.value].map(([id, note]) => [id, note.like])));

/** A message's like: the latest word about it, or what its transcript said. */
export function likeOf(/** @type {Message} */ message) {
  const known = likes.value;
  return known.has(message.id) ? (known.get(message.id) ?? null) : (message.like ?? null);
}
