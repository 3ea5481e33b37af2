// @ts-check
// What a conversation does against the API: load it, send a message (streamed), stop, retry,
// regenerate the last answer, edit a message and send it again, like. Its messages, context gauge and running turn are in the state (state.js), outside the
// components: a turn keeps streaming when the view changes (a new chat gets its id and URL
// mid-turn), and the view shows it again when it comes back.
import { api, csrfHeader, errorOf, PREFIX } from "./api.js";
import { onEvent, schedulePoll } from "./live.js";
import { chosenModel } from "./models.js";
import { readEvents } from "./sse.js";
import { batch } from "../vendor/preact.js";
import {
  conversation,
  likeOf,
  live,
  noteLikes,
  tick,
  titleOpening,
  titleSettled,
  updateConversation,
  upsert,
} from "./state.js";

/** @typedef {import("./state.js").Message} Message */
/** @typedef {import("./state.js").Turn} Turn */
/** @typedef {import("./state.js").Conversation} Conversation */
/** @typedef {import("./state.js").Like} Like */
/** @typedef {import("./events.js").TurnStreamEvents} TurnStreamEvents */
/**
 * One server-sent event of a streamed turn: its name and its data (events.d.ts, generated
 * from the OpenAPI document).
 * @typedef {{ [K in keyof TurnStreamEvents]: { name: K, data: TurnStreamEvents[K] } }[keyof TurnStreamEvents]} StreamEvent
 */

/** The likes a read of the transcript gives, as of `asked`. */
function noteRead(/** @type {Message[]} */ messages, /** @type {number} */ asked) {
  noteLikes(
    messages.map((m) => [m.id, m.like || null]),
    asked,
  );
}

export async function load(/** @type {string} */ id) {
  const asked = tick();
  try {
    const [session, messages, context] = await Promise.all([
      api.get(`/sessions/${id}`),
      api.get(`/sessions/${id}/messages`),
      api.get(`/sessions/${id}/context`).catch(() => null),
    ]);
    batch(() => {
      upsert(session);
      noteRead(messages.items, asked);
      const streaming = conversation(id).peek().turn?.status === "streaming";
      updateConversation(id, {
        ...(streaming ? {} : { messages: messages.items }),
        context,
        loaded: true,
        error: null,
      });
    });
  } catch (error) {
    updateConversation(id, { error });
  }
}

/** The conversation a new chat's page shows until its first message makes the session. */
export const NEW_CHAT = "new";

/** The server made the session for a new chat's first message: the turn moves to it, and
 * the list shows it at once, its title spinner on (the turn's end reads what the server has). */
function sessionMade(/** @type {string} */ id, /** @type {boolean} */ temporary) {
  const { turn } = conversation(NEW_CHAT).peek();
  batch(() => {
    if (!temporary) titleOpening(id);
    upsert({ id, title: null, temporary, message_count: 0, updated_at: new Date().toISOString() });
    updateConversation(id, { turn, loaded: true });
    updateConversation(NEW_CHAT, { turn: null });
  });
}

/** Leaving the new chat's page: a message refused there is not shown on its next visit. */
export function leftNewChat() {
  if (conversation(NEW_CHAT).peek().turn?.status !== "streaming") updateConversation(NEW_CHAT, { turn: null });
}

/**
 * The server-sent events of a streamed turn, their data read as JSON.
 * @param {Response} response
 * @returns {AsyncGenerator<StreamEvent>}
 */
async function* events(response) {
  for await (const event of readEvents(/** @type {ReadableStream<Uint8Array>} */ (response.body))) {
    yield /** @type {StreamEvent} */ ({ name: event.name, data: JSON.parse(event.data) });
  }
}

/**
 * What a message sends: its text (or `retry`), streamed, the picked model (models.js), its
 * images, and for a new chat's first message whether the chat is temporary. A regenerate or
 * an edit carries no images: it goes as JSON (an edited message keeps its own, on the server).
 * @param {{ text: string, files: File[], retry: boolean, regenerate: boolean, edit: string | null,
 *   temporary: boolean }} message
 * @param {boolean} first the first message of a new chat
 * @returns {FormData | string}
 */
function turnBody({ text, files, retry, regenerate, edit, temporary }, first) {
  const offering = chosenModel.peek() ? { offering: chosenModel.peek() } : {};
  if (regenerate) return JSON.stringify({ regenerate: true, stream: true, ...offering });
  if (edit) return JSON.stringify({ content: text, edit, stream: true, ...offering });
  const form = new FormData();
  if (!retry) form.append("content", text);
  form.append("stream", "true");
  if (retry) form.append("retry", "true");
  if (first) form.append("temporary", temporary ? "true" : "false");
  if (chosenModel.peek()) form.append("offering", chosenModel.peek());
  for (const file of files) form.append("images", file, file.name);
  return form;
}

/** POST the turn: a new chat's first message to /sessions/turns, which makes the session. */
function postTurn(/** @type {string} */ id, /** @type {FormData | string} */ body, /** @type {AbortSignal} */ signal) {
  /** @type {Record<string, string>} */
  const json = typeof body === "string" ? { "Content-Type": "application/json" } : {};
  return fetch(`${PREFIX}/sessions/${id === NEW_CHAT ? "" : `${id}/`}turns`, {
    method: "POST",
    body,
    credentials: "same-origin",
    headers: { Accept: "text/event-stream", ...json, ...csrfHeader() },
    signal,
  });
}

/**
 * One event of a streamed turn, applied to the turn shown in conversation `key`.
 * @param {StreamEvent} event
 * @param {Turn} turn the turn as it stands
 * @param {(changes: Partial<Turn>) => void} set
 * @param {string} key
 */
function applyEvent(event, turn, set, key) {
  const { name, data } = event;
  if (name === "token") set({ text: turn.text + data.text });
  else if (name === "tool_call") set({ steps: [...turn.steps, { call: data, result: null }] });
  else if (name === "tool_result") {
    const result = /** @type {Message} */ (data);
    set({ steps: turn.steps.map((s) => (s.call.id === result.tool_call_id ? { ...s, result } : s)) });
  } else if (name === "memory_write") set({ memory: [...turn.memory, data] });
  else if (name === "done") answered(/** @type {Answered} */ (/** @type {unknown} */ (data)), turn, set, key);
  else if (name === "error") {
    set({ status: "error", error: { message: data.error?.message || "the turn failed", status: data.status } });
  }
}

/**
 * A turn's `done` as the server always sends it (the schema leaves its parts optional).
 * @typedef {object} Answered
 * @property {Message | null} [user_message] none on a retry
 * @property {Message[]} steps
 * @property {Message} assistant_message
 * @property {Conversation["context"]} context
 * @property {Turn["memory"]} [memory_writes]
 */

/** The turn is answered: its messages join the transcript, each once (a retry answers the
 * user message already shown). */
function answered(
  /** @type {Answered} */ data,
  /** @type {Turn} */ turn,
  /** @type {(changes: Partial<Turn>) => void} */ set,
  /** @type {string} */ key,
) {
  /** @type {Message[]} */
  const fresh = [data.user_message, ...data.steps, data.assistant_message].filter((m) => m != null);
  const ids = new Set(fresh.map((m) => m.id));
  const c = conversation(key).peek();
  batch(() => {
    updateConversation(key, {
      messages: [...c.messages.filter((m) => !ids.has(m.id)), ...fresh],
      context: data.context,
      notices: new Map(c.notices).set(data.assistant_message.id, data.memory_writes || turn.memory),
    });
    set({ status: "done" });
  });
}

/**
 * A turn as its conversation shows it: `set` changes it there while it is that conversation's
 * (a retry may have replaced it); `key` moves from a new chat's to the session made for it.
 * @typedef {{ key: string, turn: Turn, set: (changes: Partial<Turn>) => void }} Shown
 */
function show(/** @type {string} */ key, /** @type {Turn} */ turn) {
  /** @type {Shown} */
  const shown = {
    key,
    turn,
    set(changes) {
      shown.turn = { ...shown.turn, ...changes };
      const now = conversation(shown.key).peek().turn;
      if (now?.controller === turn.controller) updateConversation(shown.key, { turn: shown.turn });
    },
  };
  updateConversation(key, { turn });
  return shown;
}

const UNREACHABLE = "Eonyx cannot be reached; check your connection and send again";

/**
 * How a turn that threw ended: stopped, failed (its message saved: Retry), or refused (nothing
 * saved, as far as this page knows: the message goes back to the composer).
 * @param {Shown} shown
 * @param {any} error
 * @param {{ reached: boolean, retry: boolean, refused: (message: string, status: number) => void }} how
 */
function failed(shown, error, { reached, retry, refused }) {
  const stopped = error.name === "AbortError";
  if (shown.key === NEW_CHAT)
    refused(stopped ? "stopped before the chat was made" : reached ? error.message : UNREACHABLE, 0);
  else if (stopped) shown.set({ status: "stopped" });
  else if (!reached && !retry)
    refused(UNREACHABLE, 0); // fetch itself failed: nothing was saved
  else shown.set({ status: "error", error: { message: error.message, status: error.status || 0 } });
}

/**
 * The messages a regenerate or an edit replaces leave the transcript at once, so the new
 * answer streams in their place: after the last user message (`regenerate`), or from the
 * edited one on. The server keeps them in the session file, superseded (and a like of
 * theirs, which is no longer the conversation's).
 * @param {string} id
 * @param {{ regenerate: boolean, edit: string | null }} how
 */
function cutBranch(id, { regenerate, edit }) {
  const { messages } = conversation(id).peek();
  let at = edit ? messages.findIndex((m) => m.id === edit) : -1;
  if (regenerate) for (let i = messages.length - 1; i >= 0 && at < 0; i--) if (messages[i].role === "user") at = i + 1;
  if (at >= 0) updateConversation(id, { messages: messages.slice(0, at) });
  // The turn's like was the replaced answer's: its question, which stays, is no longer liked.
  if (regenerate && at > 0) noteLikes([[messages[at - 1].id, null]]);
}

/**
 * Send a message (text and image files), or `retry` the last unanswered one, or `regenerate`
 * the last answer, or send `text` in place of the user message `edit` and all after it;
 * streamed. To `NEW_CHAT`, the first message of a new chat: the server makes the session once
 * it accepts the message (a refused one leaves none) and names it first; `onSession` learns
 * its id.
 * @param {string} id
 * @param {{ text?: string, files?: File[], retry?: boolean, regenerate?: boolean, edit?: string | null,
 *   temporary?: boolean, onSession?: (id: string) => void }} message
 */
export async function send(
  id,
  { text = "", files = [], retry = false, regenerate = false, edit = null, temporary = false, onSession },
) {
  const controller = new AbortController();
  const again = retry || regenerate; // no new user message
  const replaces = regenerate || edit !== null; // saved messages give way (a refusal is an error then)
  const previews = again ? [] : files.map((f) => URL.createObjectURL(f));
  // An edited message keeps its images (the server keeps them): shown with the new text at once.
  const images = conversation(id)
    .peek()
    .messages.find((m) => m.id === edit)?.images;
  /** @type {Message | null} */
  const local = again
    ? null
    : { id: `local-${Date.now()}`, role: "user", content: text, local: true, images, previews };
  if (replaces) cutBranch(id, { regenerate, edit });
  const shown = show(id, { status: "streaming", text: "", steps: [], memory: [], error: null, controller, local });
  const made = (/** @type {string | null | undefined} */ session) => {
    if (shown.key !== NEW_CHAT || !session) return;
    sessionMade(session, temporary);
    shown.key = session;
    onSession?.(session);
  };
  const refused = (/** @type {string} */ message, /** @type {number} */ status) =>
    shown.set({ status: "refused", error: { message, status }, local: null, returned: { text, files } });

  let reached = false; // the server answered: the message may be saved from here on
  try {
    const response = await postTurn(
      id,
      turnBody({ text, files, retry, regenerate, edit, temporary }, id === NEW_CHAT),
      controller.signal,
    );
    reached = true;
    if (!response.ok) {
      const refusal = await errorOf(response);
      made(refusal.details?.session_id); // a first message the model failed on stays saved there
      // 502: the model failed, the message is saved (Retry answers it); any other refusal
      // saved nothing: the message goes back to the composer, and there is nothing to retry.
      // A refused regenerate or edit is an error: the transcript is read again as saved.
      if (refusal.status === 502 || retry || replaces) throw refusal;
      return refused(refusal.message, refusal.status);
    }
    for await (const event of events(response)) {
      if (event.name === "session") made(event.data.session_id);
      else applyEvent(event, shown.turn, shown.set, shown.key);
    }
    if (shown.turn.status === "streaming")
      shown.set({ status: "error", error: { message: "the answer was cut off", status: 0 } });
  } catch (error) {
    failed(shown, error, { reached, retry: retry || replaces, refused });
  } finally {
    for (const url of previews) setTimeout(() => URL.revokeObjectURL(url), 60_000);
    if (shown.key !== NEW_CHAT) {
      if (shown.turn.status !== "done" && shown.turn.status !== "refused")
        await reloadAfterFailure(shown.key, shown.set);
      await settleTitle(shown.key);
    }
  }
}

/** After an error or a stop: what the server saved (the user message stays saved). */
async function reloadAfterFailure(/** @type {string} */ id, /** @type {(changes: Partial<Turn>) => void} */ set) {
  const asked = tick();
  try {
    const messages = await api.get(`/sessions/${id}/messages`);
    batch(() => {
      noteRead(messages.items, asked);
      updateConversation(id, { messages: messages.items });
      set({ local: null });
    });
  } catch {
    /* keep the local copy */
  }
}

/** The turn ended (answered, failed, stopped): the list learns the title the session has.
 * A title the server still generates comes over the socket, or the fallback poll. */
async function settleTitle(/** @type {string} */ id) {
  try {
    upsert(await api.get(`/sessions/${id}`));
  } catch {
    /* gone meanwhile */
  }
  titleSettled(id);
  schedulePoll();
}

export function stop(/** @type {string} */ id) {
  conversation(id).peek().turn?.controller.abort();
}

// ------------------------------------------------------------------ likes

/**
 * Like a message (the server remembers the exchange, a job saves it) or take the like back.
 * @param {string} id the session
 * @param {Message} message
 * @param {boolean} liked
 */
export async function like(id, message, liked) {
  const current = likeOf(message);
  if (liked) {
    noteLikes([[message.id, { status: "saving" }]]);
    try {
      const asked = tick();
      const body = await api.post(`/sessions/${id}/messages/${message.id}/like`);
      /** @type {Like} */
      const said = { status: body.status, detail: body.detail, pair_id: body.pair_id };
      noteLikes(
        body.message_ids.map((/** @type {string} */ m) => [m, said]),
        asked,
      );
      // The job may have finished, and its event come, before this answer: ask once more.
      if (body.status === "saving") await refreshLikes(id);
      pollLikes(id);
    } catch (error) {
      noteLikes([[message.id, { status: "failed", detail: error.message }]]);
    }
  } else {
    const pair = current?.pair_id;
    const ids = conversation(id)
      .peek()
      .messages.filter((m) => m.id === message.id || (pair && likeOf(m)?.pair_id === pair))
      .map((m) => m.id);
    try {
      await api.del(`/sessions/${id}/messages/${message.id}/like`);
      noteLikes(ids.map((m) => [m, null]));
    } catch (error) {
      noteLikes([
        [
          message.id,
          { ...current, status: current?.status ?? "failed", detail: `could not remove the like: ${error.message}` },
        ],
      ]);
    }
  }
}

onEvent("like.updated", (event) => {
  /** @type {Like} */
  const said = { status: event.status, detail: event.detail, pair_id: event.pair_id };
  noteLikes((event.message_ids || []).map((m) => [m, said]));
});

// A stopped turn is indexed when the server lets go of it, after this page asked: the row
// (its message count) is read again then (seen before: stale after Stop).
onEvent("session.updated", async (event) => {
  try {
    upsert(await api.get(`/sessions/${event.session_id}`));
  } catch {
    /* gone meanwhile */
  }
});

/** The likes as the server has them (the messages themselves stay as shown). */
async function refreshLikes(/** @type {string} */ id) {
  const asked = tick();
  try {
    const body = await api.get(`/sessions/${id}/messages`);
    noteRead(body.items, asked);
  } catch {
    /* the next event or poll */
  }
}

/** Without the socket, a saving like is polled until it settles. */
function pollLikes(/** @type {string} */ id) {
  const tock = async () => {
    if (live.peek() === "open") return;
    if (
      !conversation(id)
        .peek()
        .messages.some((m) => likeOf(m)?.status === "saving")
    )
      return;
    await refreshLikes(id);
    setTimeout(tock, 2000);
  };
  setTimeout(tock, 2000);
}
