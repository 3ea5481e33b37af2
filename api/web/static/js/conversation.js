// @ts-check
// What a conversation does against the API: load it, send a message (streamed), stop, retry,
// like. Its messages, context gauge and running turn are in the state (state.js), outside the
// components: a turn keeps streaming when the view changes (a new chat gets its id and URL
// mid-turn), and the view shows it again when it comes back.
import { api, csrfHeader, errorOf, PREFIX } from "./api.js";
import { onEvent, schedulePoll } from "./live.js";
import { chosenModel } from "./models.js";
import { readEvents } from "./sse.js";
import { batch } from "../vendor/preact.js";
import {
  conversation,
  forget,
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
/** @typedef {import("./state.js").Like} Like */

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

/** The sessions this tab made for a first message (kept across reloads): one still empty
 * when the person leaves it (its first message was refused) is removed, rather than listed
 * as an empty "New chat". */
const MADE_HERE = "eonyx.madeHere";
const madeHere = {
  /** @returns {string[]} */
  all: () => JSON.parse(sessionStorage.getItem(MADE_HERE) || "[]"),
  has: (/** @type {string} */ id) => madeHere.all().includes(id),
  add: (/** @type {string} */ id) =>
    sessionStorage.setItem(MADE_HERE, JSON.stringify([...madeHere.all(), id].slice(-50))),
  delete: (/** @type {string} */ id) =>
    sessionStorage.setItem(MADE_HERE, JSON.stringify(madeHere.all().filter((x) => x !== id))),
};

/** Create the session a first message goes to (listed at once, its title spinner on). */
export async function createSession(/** @type {boolean} */ temporary) {
  const session = await api.post("/sessions", { temporary });
  madeHere.add(session.id);
  batch(() => {
    if (!temporary) titleOpening(session.id);
    upsert(session);
    updateConversation(session.id, { loaded: true });
  });
  return session;
}

/** Leaving a chat: one this page made that holds nothing goes (purged: nothing to keep). */
export async function left(/** @type {string} */ id) {
  const c = conversation(id).peek();
  if (!madeHere.has(id) || !c.loaded || c.messages.length || c.turn?.status === "streaming") return;
  madeHere.delete(id);
  try {
    await api.del(`/sessions/${id}?purge=true`);
    forget(id);
  } catch {
    /* it stays listed; the server's sweep removes an empty session later */
  }
}

/**
 * The server-sent events of a streamed turn, their data read as JSON.
 * @param {Response} response
 * @returns {AsyncGenerator<{ name: string, data: any }>}
 */
async function* events(response) {
  for await (const event of readEvents(/** @type {ReadableStream<Uint8Array>} */ (response.body))) {
    yield { name: event.name, data: JSON.parse(event.data) };
  }
}

/**
 * Send a message (text and image files), or `retry` the last unanswered one; streamed.
 * @param {string} id
 * @param {{ text?: string, files?: File[], retry?: boolean }} message
 */
export async function send(id, { text = "", files = [], retry = false }) {
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
  /** @type {Turn} */
  let turn = { status: "streaming", text: "", steps: [], memory: [], error: null, controller, local };
  updateConversation(id, { turn });
  /** The turn changed: shown while it is this conversation's (a retry may have replaced it). */
  const set = (/** @type {Partial<Turn>} */ changes) => {
    turn = { ...turn, ...changes };
    if (conversation(id).peek().turn?.controller === controller) updateConversation(id, { turn });
  };

  const form = new FormData();
  if (!retry) form.append("content", text);
  form.append("stream", "true");
  if (retry) form.append("retry", "true");
  if (chosenModel.peek()) form.append("offering", chosenModel.peek()); // the picker's (models.js)
  for (const file of files) form.append("images", file, file.name);
  let reached = false; // the server answered: the message may be saved from here on
  try {
    const response = await fetch(`${PREFIX}/sessions/${id}/turns`, {
      method: "POST",
      body: form,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream", ...csrfHeader() },
      signal: controller.signal,
    });
    reached = true;
    if (!response.ok) {
      const refusal = await errorOf(response);
      // 502: the model failed, the message is saved (Retry answers it); any other refusal
      // saved nothing: the message goes back to the composer, and there is nothing to retry.
      if (refusal.status === 502 || retry) throw refusal;
      set({
        status: "refused",
        error: { message: refusal.message, status: refusal.status },
        local: null,
        returned: { text, files },
      });
      return;
    }
    for await (const event of events(response)) {
      if (event.name === "token") set({ text: turn.text + event.data.text });
      else if (event.name === "tool_call") set({ steps: [...turn.steps, { call: event.data, result: null }] });
      else if (event.name === "tool_result") {
        const result = event.data;
        set({ steps: turn.steps.map((s) => (s.call.id === result.tool_call_id ? { ...s, result } : s)) });
      } else if (event.name === "memory_write") set({ memory: [...turn.memory, event.data] });
      else if (event.name === "done") {
        const result = event.data;
        // A retry answers the user message already shown: each message once.
        const fresh = [result.user_message, ...result.steps, result.assistant_message].filter(Boolean);
        const ids = new Set(fresh.map((m) => m.id));
        const c = conversation(id).peek();
        batch(() => {
          updateConversation(id, {
            messages: [...c.messages.filter((m) => !ids.has(m.id)), ...fresh],
            context: result.context,
            notices: new Map(c.notices).set(result.assistant_message.id, result.memory_writes || turn.memory),
          });
          set({ status: "done" });
        });
      } else if (event.name === "error") {
        set({
          status: "error",
          error: { message: event.data.error?.message || "the turn failed", status: event.data.status },
        });
      }
    }
    if (turn.status === "streaming") set({ status: "error", error: { message: "the answer was cut off", status: 0 } });
  } catch (error) {
    if (error.name === "AbortError") set({ status: "stopped" });
    else if (!reached && !retry) {
      // fetch itself failed: the server was not reached, nothing was saved
      const message = "Eonyx cannot be reached; check your connection and send again";
      set({ status: "refused", error: { message, status: 0 }, local: null, returned: { text, files } });
    } else set({ status: "error", error: { message: error.message, status: error.status || 0 } });
  } finally {
    for (const url of local?.previews || []) setTimeout(() => URL.revokeObjectURL(url), 60_000);
    if (turn.status !== "done" && turn.status !== "refused") await reloadAfterFailure(id, set);
    await settleTitle(id);
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

onEvent(
  "like.updated",
  (/** @type {{ message_ids?: string[], status: string, detail?: string, pair_id?: string }} */ event) => {
    /** @type {Like} */
    const said = { status: event.status, detail: event.detail, pair_id: event.pair_id };
    noteLikes((event.message_ids || []).map((/** @type {string} */ m) => [m, said]));
  },
);

// A stopped turn is indexed when the server lets go of it, after this page asked: the row
// (its message count) is read again then (seen before: stale after Stop).
onEvent("session.updated", async (/** @type {{ session_id: string }} */ event) => {
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
