// @ts-check
// The deployment's run-time switches (GET/PATCH /api/v1/settings) as the panels show them:
// in Model settings, whether each task role's feature is on (an administrator turns it on
// there); in the memory panel, why Preferences (USER.md) may stay empty. A change applies to
// the next request of every server process, without a restart.

import { html, useState } from "../vendor/preact.js";
import { messageOf } from "./common.js";

/**
 * A GET /settings answer: each switch's value (and where it comes from).
 * @typedef {Record<string, { value: any, source?: string }>} Settings
 */
/**
 * A task role's switch: whether it is on, why it is off, and the PATCH that turns it on.
 * @typedef {{ isOn: (s: Settings) => boolean, off: (s: Settings) => string, turnOn: () => Record<string, unknown> }} RoleRule
 */

/** The effective value of switch `name` in a GET /settings answer. */
const on = (/** @type {Settings | null | undefined} */ settings, /** @type {string} */ name) => settings?.[name]?.value;

/** How chats are titled in each session_title_mode but llm (null: by the client). */
/** @type {Record<string, string>} */
const TITLED = {
  truncate: "by their first words",
  sequential: "with a number",
  "": "by their first words (with a number in the terminal)",
};

/**
 * Per task role: whether its feature is on, why not, and the PATCH that turns it on.
 * A role missing here (chat, summarization) has no switch: it is always used.
 */
/** @type {Record<string, RoleRule>} */
export const ROLE_SWITCHES = {
  session_title: {
    isOn: (s) => on(s, "session_title_mode") === "llm",
    off: (s) =>
      `Off: new chats are titled ${TITLED[on(s, "session_title_mode") ?? ""]}, not by a model (session_title_mode).`,
    turnOn: () => ({ session_title_mode: "llm" }),
  },
  user_memory_extraction: {
    isOn: (s) => Boolean(on(s, "user_memory_extraction") && on(s, "user_profile_enabled")),
    off: (s) =>
      on(s, "user_profile_enabled")
        ? "Off: the user profile is not learned from chats (user_memory_extraction)."
        : "Off: the user profile is switched off (user_profile_enabled).",
    turnOn: () => ({ user_memory_extraction: true, user_profile_enabled: true }),
  },
  agent_memory_curation: {
    isOn: (s) => Boolean(on(s, "agent_memory_enabled")),
    off: () => "Off: the agent memory is switched off, so liked turns are not curated (agent_memory_enabled).",
    turnOn: () => ({ agent_memory_enabled: true }),
  },
};

/** One role's switch under its model choice: "On", or why it is off and (admins) a button. */
/**
 * @param {{ api: import("./common.js").Api, role: string, settings: Settings | null, canChange: boolean,
 *   onChanged: (settings: Settings) => void }} props
 */
export function RoleSwitch({ api, role, settings, canChange, onChanged }) {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const rule = ROLE_SWITCHES[role];
  if (!rule || !settings) return null;
  if (rule.isOn(settings)) {
    return html`<p class="pn-switch" data-switch=${role} data-on="true"><span class="pn-key-set">On</span></p>`;
  }
  const turnOn = async () => {
    setError("");
    setBusy(true);
    try {
      onChanged(await api.patch("/settings", rule.turnOn()));
    } catch (e) {
      setError(`Not turned on: ${messageOf(e)}`);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="pn-switch" data-switch=${role} data-on="false">
    <p><span class="pn-key-unset">${rule.off(settings)}</span>
      ${
        canChange
          ? html` <button type="button" class="pn-button small" disabled=${busy} onClick=${turnOn}
              aria-label=${`Turn on ${role}`}>Turn on</button>`
          : null
      }</p>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
  </div>`;
}

/**
 * The Preferences tab's note when USER.md is not kept up to date: the profile is off, or it
 * is not learned from chats. An administrator turns extraction on from here.
 */
/**
 * @param {{ api: import("./common.js").Api, settings: Settings | null, isAdmin: boolean,
 *   onChanged: (settings: Settings) => void }} props
 */
export function ProfileNote({ api, settings, isAdmin, onChanged }) {
  const [error, setError] = useState("");
  if (!settings) return null;
  const profile = on(settings, "user_profile_enabled");
  const extraction = on(settings, "user_memory_extraction");
  if (profile && extraction) return null;
  const what = !profile
    ? "The user profile is switched off on this server: the assistant neither reads nor writes this file."
    : "Profile extraction is off: the assistant does not learn this file from your chats; it adds only what you ask it to remember.";
  const turnOn = async () => {
    setError("");
    try {
      onChanged(await api.patch("/settings", { user_profile_enabled: true, user_memory_extraction: true }));
    } catch (e) {
      setError(`Not turned on: ${messageOf(e)}`);
    }
  };
  return html`<div class="memory-switch-note" role="note">
    <p>${what} ${
      isAdmin
        ? html`<button type="button" class="pn-button small" onClick=${turnOn}>Turn profile extraction on</button>`
        : "Ask your administrator to turn it on."
    }</p>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
  </div>`;
}
