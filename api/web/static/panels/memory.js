// @ts-check
// The memory panel (the brain icon): Identity (IDENTITY.md), Preferences (USER.md) and Notes
// (MEMORY.md), each in a CodeMirror Markdown editor with a live character count against the
// file's limit. Saving sends back the version the editor read: the server backs the old file
// up first and answers 409 when the file changed meanwhile (the assistant may have written
// it), and the panel then offers to reload. Backups are listed and restored (the current file
// is itself backed up). Only administrators edit the identity; others read it.

import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import {
  EditorState,
  EditorView,
  defaultHighlightStyle,
  defaultKeymap,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  history,
  historyKeymap,
  indentOnInput,
  keymap,
  lineNumbers,
  markdownLanguage,
  syntaxHighlighting,
} from "../vendor/codemirror.js";
import { Confirm, PanelFrame, ensureStylesheet, formatStamp, messageOf } from "./common.js";
import { ProfileNote } from "./switches.js";

ensureStylesheet();

/** @typedef {import("./common.js").Api} Api */
/** @typedef {import("./switches.js").Settings} Settings */
/** @typedef {{ kind: "identity" | "user" | "agent", label: string, name: string, about: string }} MemoryFileInfo */
/**
 * The file as the server gave it (GET /memory/<kind>), or how reading it went.
 * @typedef {{ loading: boolean, failed?: boolean, content: string, version: string, limit: number }} Saved
 */
/** @typedef {{ status: string, error: string, conflict: boolean }} Notice */
/**
 * A yes/no question the panel asks (the Confirm's props, and what a yes does).
 * @typedef {{ title: string, message: string, confirmLabel: string, cancelLabel?: string, onConfirm: () => void }} Question
 */

/** @type {MemoryFileInfo[]} */
const FILES = [
  {
    kind: "identity",
    label: "Identity",
    name: "IDENTITY.md",
    about: "The assistant's persona and tone, first in every prompt. Applies from the next message.",
  },
  {
    kind: "user",
    label: "Preferences",
    name: "USER.md",
    about: "What the assistant remembers about you. Applies from your next chat.",
  },
  {
    kind: "agent",
    label: "Notes",
    name: "MEMORY.md",
    about: "The assistant's own notes about your work. Applies from your next chat.",
  },
];

/** Characters as the server counts them (code points, not UTF-16 units). */
const charCount = (/** @type {string} */ text) => [...text].length;
const number = (/** @type {number} */ n) => n.toLocaleString("en-US");
// CodeMirror keeps "\n" line breaks; compare the saved file the same way.
const normalized = (/** @type {string} */ text) => text.replace(/\r\n?/g, "\n");

/** `USER.md.20250102T030405-123456Z` -> a Date (the timestamp is UTC). */
export function backupDate(/** @type {string} */ name) {
  const m = /\.(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})-(\d{6})Z$/.exec(name);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, us] = m.map(Number);
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s, Math.floor(us / 1000)));
}

/**
 * @param {{ id: string, doc: string, readOnly: boolean, label: string, describedBy: string,
 *   onChange: (text: string) => void, viewRef: { current: EditorView | null } }} props
 */
function MarkdownEditor({ id, doc, readOnly, label, describedBy, onChange, viewRef }) {
  const host = useRef(/** @type {HTMLDivElement | null} */ (null));
  const changed = useRef(onChange);
  changed.current = onChange;
  useEffect(() => {
    const view = new EditorView({
      parent: /** @type {HTMLDivElement} */ (host.current),
      state: EditorState.create({
        doc,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          highlightSpecialChars(),
          history(),
          drawSelection(),
          indentOnInput(),
          highlightActiveLine(),
          keymap.of([...defaultKeymap, ...historyKeymap]),
          markdownLanguage,
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          EditorView.lineWrapping,
          EditorState.readOnly.of(readOnly),
          EditorView.editable.of(!readOnly),
          EditorView.contentAttributes.of({
            id,
            "aria-label": label,
            "aria-describedby": describedBy,
            "aria-readonly": String(readOnly),
          }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed.current(update.state.doc.toString());
          }),
        ],
      }),
    });
    viewRef.current = view;
    return () => {
      view.destroy();
      viewRef.current = null;
    };
  }, [readOnly]);
  return html`<div class="memory-editor" ref=${host}></div>`;
}

/** The file as the server last gave it ({loading} first, {failed} when it could not be read),
 * and the calls that change it; each keeps and answers the server's file. */
function useServerFile(/** @type {Api} */ api, /** @type {MemoryFileInfo} */ file) {
  const [saved, setSaved] = useState(/** @type {Saved} */ ({ loading: true }));
  const keep = (/** @type {Saved} */ got) => {
    setSaved({ loading: false, content: normalized(got.content), version: got.version, limit: got.limit });
    return got;
  };
  return {
    saved,
    read: async () => keep(await api.get(`/memory/${file.kind}`)),
    failed: () => setSaved(/** @type {Saved} */ ({ loading: false, failed: true })),
    // With the version the editor read: the server answers 409 when the file changed since.
    write: async (/** @type {string} */ content) =>
      keep(await api.put(`/memory/${file.kind}`, { content, version: saved.version })),
    restore: async (/** @type {string} */ name) =>
      keep(await api.post(`/memory/${file.kind}/backups/${encodeURIComponent(name)}/restore`)),
  };
}

/** The editor's text as typed (`draft`), and `replace` to put other content in the editor. */
function useDraft() {
  const [draft, setDraft] = useState("");
  const view = useRef(/** @type {EditorView | null} */ (null));
  const replace = (/** @type {string} */ content) => {
    const editor = view.current;
    if (editor) editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: content } });
    setDraft(normalized(content));
  };
  return { draft, setDraft, replace, view };
}

/** The file's backups (null until listed), listed again after each change; for editors only. */
/**
 * @param {Api} api
 * @param {MemoryFileInfo} file
 * @param {boolean} enabled
 * @param {(error: string) => void} onError
 */
function useBackups(api, file, enabled, onError) {
  const [names, setNames] = useState(/** @type {string[] | null} */ (null));
  const reload = async () => {
    if (!enabled) return;
    try {
      const list = await api.get(`/memory/${file.kind}/backups`);
      setNames(list.map((/** @type {{ name: string }} */ b) => b.name));
    } catch (e) {
      setNames([]);
      onError(`Could not list the backups: ${messageOf(e)}`);
    }
  };
  return { names, reload };
}

/** What the tab says under the editor: a status line, an error, and whether a save met a newer
 * file (a 409). `say(changes)` sets some of them and keeps the others. */
function useNotice() {
  const [notice, setNotice] = useState(/** @type {Notice} */ ({ status: "", error: "", conflict: false }));
  const say = (/** @type {Partial<Notice>} */ changes) => setNotice((now) => ({ ...now, ...changes }));
  return /** @type {const} */ ([notice, say]);
}

/** One file's tab: editor, count, save, conflict, backups. */
/**
 * @param {{ api: Api, file: MemoryFileInfo, canEdit: boolean, active: boolean,
 *   onDirty: (kind: string, dirty: boolean) => void, ask: (question: Question) => void,
 *   settings: Settings | null, isAdmin: boolean, onSettings: (settings: Settings) => void }} props
 */
function MemoryFile({ api, file, canEdit, active, onDirty, ask, settings, isAdmin, onSettings }) {
  const server = useServerFile(api, file);
  const { saved } = server;
  const { draft, setDraft, replace, view } = useDraft();
  const [notice, say] = useNotice();
  const backups = useBackups(api, file, canEdit, (error) => say({ error }));
  const [saving, setSaving] = useState(false);
  const prefix = `memory-${file.kind}`;

  const load = async (/** @type {{ replace: boolean }} */ { replace: intoEditor }) => {
    say({ error: "" });
    try {
      const got = await server.read();
      if (intoEditor) replace(got.content);
      else setDraft(normalized(got.content));
      say({ conflict: false });
      return got;
    } catch (e) {
      server.failed();
      say({ error: `Could not read ${file.name}: ${messageOf(e)}` });
      return null;
    }
  };

  useEffect(() => {
    if (active && saved.loading) {
      load({ replace: false });
      backups.reload();
    }
  }, [active]);

  const dirty = !saved.loading && !saved.failed && draft !== saved.content;
  useEffect(() => onDirty(file.kind, dirty), [dirty]);

  if (saved.loading || saved.failed) {
    return html`<div class="memory-file">
      ${saved.loading ? html`<p class="pn-muted" role="status">Loading ${file.name}…</p>` : null}
      ${notice.error ? html`<p class="pn-error" role="alert">${notice.error}</p>` : null}
    </div>`;
  }

  const chars = charCount(draft);
  const over = chars > saved.limit;

  const save = async () => {
    if (over || saving) return;
    setSaving(true);
    say({ status: "", error: "" });
    try {
      await server.write(draft);
      say({ status: `Saved ${file.name}. The previous version was backed up.` });
      backups.reload();
    } catch (e) {
      if (e.status === 409) say({ conflict: true });
      else say({ error: `Not saved: ${messageOf(e)}` });
    } finally {
      setSaving(false);
    }
  };

  const reload = async () => {
    const got = await load({ replace: true });
    if (got) say({ status: `Reloaded ${file.name}.` });
    backups.reload();
  };

  const restore = async (/** @type {string} */ name) => {
    const stamp = formatStamp(backupDate(name) || new Date(NaN));
    const go = async () => {
      say({ status: "", error: "" });
      try {
        const restored = await server.restore(name);
        replace(restored.content);
        say({ conflict: false, status: `Restored the backup of ${stamp}. The version it replaced was backed up.` });
        backups.reload();
      } catch (e) {
        say({ error: `Not restored: ${messageOf(e)}` });
      }
    };
    if (dirty) {
      ask({
        title: "Discard your edits?",
        message: `Restoring the backup of ${stamp} replaces your unsaved edits to ${file.name}.`,
        confirmLabel: "Discard and restore",
        onConfirm: go,
      });
    } else await go();
  };

  return html`<div class="memory-file">
    <p class="pn-muted" id=${`${prefix}-about`}>${file.about}</p>
    ${file.kind === "user" ? html`<${ProfileNote} api=${api} settings=${settings} isAdmin=${isAdmin} onChanged=${onSettings} />` : null}
    ${
      canEdit
        ? null
        : html`<p class="memory-readonly" id=${`${prefix}-readonly`}>
          Only administrators can edit the identity; you can read it.
        </p>`
    }
    <${MarkdownEditor}
      id=${`${prefix}-editor`}
      doc=${saved.content}
      readOnly=${!canEdit}
      label=${`${file.name} (Markdown)`}
      describedBy=${`${prefix}-count`}
      onChange=${(/** @type {string} */ text) => setDraft(text)}
      viewRef=${view}
    />
    <${EditorBar}
      prefix=${prefix}
      chars=${chars}
      limit=${saved.limit}
      canEdit=${canEdit}
      dirty=${dirty}
      saving=${saving}
      onRevert=${() => replace(saved.content)}
      onSave=${save}
    />
    ${
      over && canEdit
        ? html`<p class="pn-error" role="alert">
          ${file.name} is over its limit of ${number(saved.limit)} characters; shorten it to save.
        </p>`
        : null
    }
    ${notice.conflict ? html`<${Conflict} file=${file} onReload=${reload} />` : null}
    ${notice.error ? html`<p class="pn-error" role="alert">${notice.error}</p>` : null}
    <p class="pn-status" role="status">${dirty || over ? "" : notice.status}</p>
    ${canEdit ? html`<${Backups} prefix=${prefix} file=${file} names=${backups.names} onRestore=${restore} />` : null}
  </div>`;
}

/** Under the editor: the count against the limit, and for editors Revert and Save. */
/**
 * @param {{ prefix: string, chars: number, limit: number, canEdit: boolean, dirty: boolean, saving: boolean,
 *   onRevert: () => void, onSave: () => void }} props
 */
function EditorBar({ prefix, chars, limit, canEdit, dirty, saving, onRevert, onSave }) {
  const over = chars > limit;
  return html`<div class="memory-bar">
    <span id=${`${prefix}-count`} class=${`memory-count${over ? " over" : ""}`} data-testid="char-count">
      ${number(chars)} / ${number(limit)} characters${over ? ` — ${number(chars - limit)} over the limit` : ""}
    </span>
    ${
      canEdit
        ? html`<span class="memory-buttons">
          ${dirty ? html`<span class="memory-unsaved">Unsaved edits</span>` : null}
          <button type="button" class="pn-button" disabled=${!dirty || saving} onClick=${onRevert}>Revert</button>
          <button
            type="button"
            class="pn-button primary"
            disabled=${!dirty || over || saving}
            aria-describedby=${over ? `${prefix}-count` : undefined}
            onClick=${onSave}
          >${saving ? "Saving…" : "Save"}</button>
        </span>`
        : null
    }
  </div>`;
}

/** A save refused because the file changed meanwhile: say so and offer to reload it. */
/** @param {{ file: MemoryFileInfo, onReload: () => void }} props */
function Conflict({ file, onReload }) {
  return html`<div class="pn-error memory-conflict" role="alert">
    <p>${file.name} changed meanwhile (the assistant or another window saved it), so your edit was not saved.
    Reload to see the current file; your edits here will be replaced.</p>
    <button type="button" class="pn-button" onClick=${onReload}>Reload ${file.name}</button>
  </div>`;
}

/**
 * The file's backups, each with its Restore button.
 * @param {{ prefix: string, file: MemoryFileInfo, names: string[] | null, onRestore: (name: string) => void }} props
 */
function Backups({ prefix, file, names, onRestore }) {
  return html`<section class="memory-backups" aria-labelledby=${`${prefix}-backups`}>
    <h3 id=${`${prefix}-backups`}>Backups of ${file.name}</h3>
    ${
      names === null
        ? html`<p class="pn-muted">Loading…</p>`
        : names.length === 0
          ? html`<p class="pn-muted">No backups yet: one is written before every save.</p>`
          : html`<ul class="memory-backup-list">
            ${names.map((name) => {
              const date = backupDate(name);
              const stamp = date ? formatStamp(date) : name;
              return html`<li key=${name}>
                <time datetime=${date ? date.toISOString() : undefined}>${stamp}</time>
                <button
                  type="button"
                  class="pn-button small"
                  aria-label=${`Restore the backup of ${stamp}`}
                  onClick=${() => onRestore(name)}
                >Restore</button>
              </li>`;
            })}
          </ul>`
    }
  </section>`;
}

/** @param {import("../js/panels.js").PanelProps} props */
export default function MemoryPanel({ api, user, onClose }) {
  const [tab, setTab] = useState(/** @type {MemoryFileInfo["kind"]} */ ("user"));
  const [dirty, setDirty] = useState(/** @type {Record<string, boolean>} */ ({}));
  const [question, setQuestion] = useState(/** @type {Question | null} */ (null));
  const tabs = useRef(/** @type {Record<string, HTMLButtonElement | null>} */ ({}));
  const isAdmin = Boolean(user?.is_admin);
  // GET /settings: is USER.md kept up to date?
  const [settings, setSettings] = useState(/** @type {Settings | null} */ (null));
  useEffect(() => {
    api.get("/settings").then(setSettings, () => {});
  }, []);

  const onDirty = (/** @type {string} */ kind, /** @type {boolean} */ value) =>
    setDirty((d) => (Boolean(d[kind]) === value ? d : { ...d, [kind]: value }));
  const ask = (/** @type {Question} */ q) => setQuestion(q);

  const unsaved = FILES.filter((f) => dirty[f.kind]);
  const requestClose = () => {
    if (question) return setQuestion(null);
    if (unsaved.length === 0) return onClose();
    ask({
      title: "Discard unsaved edits?",
      message: `Your edits to ${unsaved.map((f) => f.name).join(" and ")} are not saved. Close and lose them?`,
      confirmLabel: "Discard and close",
      cancelLabel: "Keep editing",
      onConfirm: onClose,
    });
  };

  // Arrow keys move between tabs (the WAI-ARIA tabs pattern).
  const onTabKey = (/** @type {KeyboardEvent} */ event) => {
    const i = FILES.findIndex((f) => f.kind === tab);
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    let next = null;
    if (step) next = FILES[(i + step + FILES.length) % FILES.length];
    if (event.key === "Home") next = FILES[0];
    if (event.key === "End") next = FILES[FILES.length - 1];
    if (!next) return;
    event.preventDefault();
    setTab(next.kind);
    tabs.current[next.kind]?.focus();
  };

  return html`<${PanelFrame} className="memory-panel" titleId="memory-title" title="Agent memory"
    closeLabel="Close the memory panel" onRequestClose=${requestClose}>
    <div role="tablist" aria-label="Memory files" class="pn-tabs" onKeyDown=${onTabKey}>
      ${FILES.map(
        (f) => html`<button
          key=${f.kind}
          type="button"
          role="tab"
          id=${`memory-tab-${f.kind}`}
          aria-selected=${tab === f.kind ? "true" : "false"}
          aria-controls=${`memory-panel-${f.kind}`}
          tabindex=${tab === f.kind ? 0 : -1}
          ref=${(/** @type {HTMLButtonElement | null} */ el) => (tabs.current[f.kind] = el)}
          onClick=${() => setTab(f.kind)}
        ><span>${f.label}${dirty[f.kind] ? html`<span class="memory-dot"> •<span class="pn-sr-only"> (unsaved)</span></span>` : null}</span>
          <span class="pn-muted pn-tab-file">${f.name}</span></button>`,
      )}
    </div>
    ${FILES.map(
      (f) => html`<section
        key=${f.kind}
        role="tabpanel"
        id=${`memory-panel-${f.kind}`}
        aria-labelledby=${`memory-tab-${f.kind}`}
        hidden=${tab !== f.kind}
        class="pn-body"
      >
        <${MemoryFile}
          api=${api}
          file=${f}
          canEdit=${f.kind !== "identity" || isAdmin}
          active=${tab === f.kind}
          onDirty=${onDirty}
          ask=${ask}
          settings=${settings}
          isAdmin=${isAdmin}
          onSettings=${setSettings}
        />
      </section>`,
    )}
    ${
      question
        ? html`<${Confirm}
          ...${question}
          onCancel=${() => setQuestion(null)}
          onConfirm=${() => {
            setQuestion(null);
            question.onConfirm();
          }}
        />`
        : null
    }
  <//>`;
}
