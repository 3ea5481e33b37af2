// @ts-check
// Model tokens in the account panel: everyone sees their own month (the `tokens` key of
// GET /me/usage: what they used and their budget); an administrator also sees every user's
// month (GET /admin/usage?month=YYYY-MM): calls, prompt, completion and total tokens, and
// their budget, with a month to choose, beside what each stores now (GET /usage/users). What is counted is the model's own usage (an
// estimate when it gives none), background jobs included; a budget resets on the first of
// the month, UTC.

import { html, useEffect, useState } from "../vendor/preact.js";
import { inputValue } from "../js/util.js";
import { formatBytes, messageOf } from "./common.js";

/** @typedef {import("./common.js").Api} Api */
/**
 * A month's budget: its limit (0: none), what was used and is left, when it starts again.
 * @typedef {{ limit: number, used: number, remaining: number, resets_at: string }} Budget
 */
/** @typedef {{ used_bytes: number, quota_bytes: number | null }} Storage */
/**
 * One user's month (GET /admin/usage).
 * @typedef {object} UsageEntry
 * @property {string} user_id
 * @property {string} username
 * @property {number} calls
 * @property {number} prompt_tokens
 * @property {number} completion_tokens
 * @property {number} total_tokens
 * @property {number | null} monthly_token_budget
 * @property {Budget} budget
 * @property {{ offering: string, role: string, total_tokens: number }[]} by_offering
 */

function number(/** @type {number} */ count) {
  return count.toLocaleString("en-US");
}

function resetDay(/** @type {string} */ iso) {
  return new Date(iso).toLocaleDateString("en-US", { timeZone: "UTC", dateStyle: "medium" });
}

/** @param {{ api: Api }} props */
export function MyTokens({ api }) {
  const [tokens, setTokens] = useState(
    /** @type {{ total_tokens: number, month: string, budget: Budget } | null} */ (null),
  );
  const [error, setError] = useState("");
  useEffect(() => {
    api
      .get("/me/usage")
      .then((usage) => setTokens(usage.tokens || null))
      .catch((/** @type {Error} */ e) => setError(`Could not read your token usage: ${messageOf(e)}`));
  }, []);
  const budget = tokens?.budget;
  const limit = budget?.limit || 0;
  const over = budget && limit && budget.used >= limit;
  return html`<section class="account-tokens" aria-labelledby="tokens-title">
    <h3 id="tokens-title">Model tokens</h3>
    ${
      tokens
        ? html`<p class="pn-muted" id="tokens-figures">
              ${number(tokens.total_tokens)} tokens used in ${tokens.month}${
                limit
                  ? ` of ${number(limit)} (${Math.min(100, Math.round((100 * tokens.budget.used) / limit))} %)`
                  : ", no budget"
              }; the budget starts again on ${resetDay(tokens.budget.resets_at)}.
            </p>
            ${
              limit
                ? html`<meter min="0" max=${limit} value=${tokens.budget.used} high=${limit * 0.9}
              optimum="0" aria-labelledby="tokens-title" aria-describedby="tokens-figures"></meter>`
                : null
            }
            ${over ? html`<p class="pn-error" role="alert">Your token budget for this month is used up: new messages are refused until ${resetDay(tokens.budget.resets_at)}.</p>` : null}`
        : null
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
  </section>`;
}

function thisMonth() {
  return new Date().toISOString().slice(0, 7);
}

/** @param {{ storage: Storage | undefined }} props */
function StoredCell({ storage }) {
  if (!storage) return html`<td class="num">—</td>`;
  const quota = storage.quota_bytes;
  const full = quota && storage.used_bytes >= quota;
  return html`<td class="num">${formatBytes(storage.used_bytes)}${
    quota ? html` <span class="pn-muted">of ${formatBytes(quota)}</span>` : null
  }${full ? html` <span class="pn-key-unset">full</span>` : null}</td>`;
}

/** @param {{ entry: UsageEntry, storage: Storage | undefined }} props */
function UsageRow({ entry, storage }) {
  const budget = entry.budget;
  const over = budget.limit && budget.used >= budget.limit;
  const roles = entry.by_offering.map((line) => `${line.offering} (${line.role}): ${number(line.total_tokens)}`);
  return html`<tr data-user=${entry.username} class=${over ? "usage-over" : ""}>
    <th scope="row">${entry.username}</th>
    <td class="num">${number(entry.calls)}</td>
    <td class="num">${number(entry.prompt_tokens)}</td>
    <td class="num">${number(entry.completion_tokens)}</td>
    <td class="num" title=${roles.join("\n")}>${number(entry.total_tokens)}</td>
    <td class="num">${
      budget.limit
        ? html`${number(budget.limit)}${entry.monthly_token_budget === null ? html` <span class="pn-muted">(default)</span>` : null}`
        : html`<span class="pn-muted">none</span>`
    }</td>
    <td class="num">${
      budget.limit ? (over ? html`<span class="pn-key-unset">used up</span>` : number(budget.remaining)) : "—"
    }</td>
    <${StoredCell} storage=${storage} />
  </tr>`;
}

/** @param {{ api: Api }} props */
export function TokenUsage({ api }) {
  const [month, setMonth] = useState(thisMonth());
  const [usage, setUsage] = useState(/** @type {{ month: string, users: UsageEntry[] } | null} */ (null));
  const [error, setError] = useState("");
  const [stored, setStored] = useState(/** @type {Record<string, Storage>} */ ({}));
  useEffect(() => {
    api
      .get("/usage/users")
      .then((/** @type {{ user_id: string, storage: Storage }[]} */ users) =>
        setStored(Object.fromEntries(users.map((u) => [u.user_id, u.storage]))),
      )
      .catch((/** @type {Error} */ e) => setError(`Could not read what users store: ${messageOf(e)}`));
  }, []);
  useEffect(() => {
    setError("");
    api
      .get(`/admin/usage?month=${encodeURIComponent(month)}`)
      .then(setUsage)
      .catch((/** @type {Error} */ e) => {
        setUsage({ month, users: [] });
        setError(`Could not read the token usage: ${messageOf(e)}`);
      });
  }, [month]);
  return html`<section aria-labelledby="usage-title" class="usage-section">
    <h3 id="usage-title">Token usage</h3>
    <label class="usage-month">Month
      <input type="month" value=${month} max=${thisMonth()}
        onChange=${(/** @type {Event} */ e) => inputValue(e) && setMonth(inputValue(e))} />
    </label>
    ${
      usage === null
        ? html`<p class="pn-muted" role="status">Loading…</p>`
        : html`<table class="offering-table usage-table">
          <caption class="pn-sr-only">Token usage in ${usage.month}</caption>
          <thead><tr><th scope="col">User</th><th scope="col" class="num">Calls</th>
            <th scope="col" class="num">Prompt</th><th scope="col" class="num">Completion</th>
            <th scope="col" class="num">Total</th><th scope="col" class="num">Budget</th>
            <th scope="col" class="num">Remaining</th><th scope="col" class="num">Stored now</th></tr></thead>
          <tbody>${usage.users.map(
            (/** @type {UsageEntry} */ entry) =>
              html`<${UsageRow} key=${entry.user_id} entry=${entry} storage=${stored[entry.user_id]} />`,
          )}</tbody>
        </table>`
    }
    <p class="pn-muted">Prompt and completion tokens as the models reported them, background jobs included; budgets reset on the first of each month (UTC). Set a user's budget with <code>eonyx users budget</code>, their storage quota with <code>eonyx users quota</code>, or either with <code>${"PATCH /api/v1/users/<id>"}</code>.</p>
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
  </section>`;
}
