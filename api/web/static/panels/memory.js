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

ensureStylesheet();

const FILES = [
  {
    kind: "identity",
    label: "Identity",
    name: "IDENTITY.md",
    about: "The assistant's persona and tone, first in every prompt. Applies from the next restart.",
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
const charCount = (text) => [...text].length;
const number = (n) => n.toLocaleString("en-US");
// CodeMirror keeps "\n" line breaks; compare the saved file the same way.
const normalized = (text) => text.replace(/\r\n?/g, "\n");

/** `USER.md.20250102T030405-123456Z` -> a Date (the timestamp is UTC). */
export function backupDate(name) {
  const m = /\.(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})-(\d{6})Z$/.exec(name);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, us] = m.map(Number);
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s, Math.floor(us / 1000)));
}

function MarkdownEditor({ id, doc, readOnly, label, describedBy, onChange, viewRef }) {
  const host = useRef(null);
  const changed = useRef(onChange);
  changed.current = onChange;
  useEffect(() => {
    const view = new EditorView({
      parent: host.current,
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

/** One file's tab: editor, count, save, conflict, backups. */
function MemoryFile({ api, file, canEdit, active, onDirty, ask }) {
  const [state, setState] = useState({ loading: true });
  const [draft, setDraft] = useState("");
  const [status, setStatus] = useState("");
  const [error, setError] = useState("");
  const [conflict, setConflict] = useState(false);
  const [saving, setSaving] = useState(false);
  const [backups, setBackups] = useState(null);
  const view = useRef(null);
  const prefix = `memory-${file.kind}`;

  const replaceDoc = (content) => {
    const editor = view.current;
    if (editor) editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: content } });
    setDraft(normalized(content));
  };

  const loadBackups = async () => {
    if (!canEdit) return;
    try {
      const list = await api.get(`/memory/${file.kind}/backups`);
      setBackups(list.map((b) => b.name));
    } catch (e) {
      setBackups([]);
      setError(`Could not list the backups: ${messageOf(e)}`);
    }
  };

  const load = async ({ replace }) => {
    setError("");
    try {
      const got = await api.get(`/memory/${file.kind}`);
      setState({ loading: false, content: normalized(got.content), version: got.version, limit: got.limit });
      if (replace) replaceDoc(got.content);
      else setDraft(normalized(got.content));
      setConflict(false);
      return got;
    } catch (e) {
      setState({ loading: false, failed: true });
      setError(`Could not read ${file.name}: ${messageOf(e)}`);
      return null;
    }
  };

  useEffect(() => {
    if (active && state.loading) {
      load({ replace: false });
      loadBackups();
    }
  }, [active]);

  const dirty = !state.loading && !state.failed && draft !== state.content;
  useEffect(() => onDirty(file.kind, dirty), [dirty]);

  if (state.loading || state.failed) {
    return html`<div class="memory-file">
      ${state.loading ? html`<p class="pn-muted" role="status">Loading ${file.name}…</p>` : null}
      ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    </div>`;
  }

  const chars = charCount(draft);
  const over = chars > state.limit;

  const save = async () => {
    if (over || saving) return;
    setSaving(true);
    setStatus("");
    setError("");
    try {
      const saved = await api.put(`/memory/${file.kind}`, { content: draft, version: state.version });
      setState({ loading: false, content: normalized(saved.content), version: saved.version, limit: saved.limit });
      setStatus(`Saved ${file.name}. The previous version was backed up.`);
      loadBackups();
    } catch (e) {
      if (e.status === 409) setConflict(true);
      else setError(`Not saved: ${messageOf(e)}`);
    } finally {
      setSaving(false);
    }
  };

  const reload = async () => {
    const got = await load({ replace: true });
    if (got) setStatus(`Reloaded ${file.name}.`);
    loadBackups();
  };

  const restore = async (name) => {
    const stamp = formatStamp(backupDate(name) || new Date(NaN));
    const go = async () => {
      setStatus("");
      setError("");
      try {
        const restored = await api.post(`/memory/${file.kind}/backups/${encodeURIComponent(name)}/restore`);
        setState({
          loading: false,
          content: normalized(restored.content),
          version: restored.version,
          limit: restored.limit,
        });
        replaceDoc(restored.content);
        setConflict(false);
        setStatus(`Restored the backup of ${stamp}. The version it replaced was backed up.`);
        loadBackups();
      } catch (e) {
        setError(`Not restored: ${messageOf(e)}`);
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
    ${
      canEdit
        ? null
        : html`<p class="memory-readonly" id=${`${prefix}-readonly`}>
          Only administrators can edit the identity; you can read it.
        </p>`
    }
    <${MarkdownEditor}
      id=${`${prefix}-editor`}
      doc=${state.content}
      readOnly=${!canEdit}
      label=${`${file.name} (Markdown)`}
      describedBy=${`${prefix}-count`}
      onChange=${(text) => setDraft(text)}
      viewRef=${view}
    />
    <div class="memory-bar">
      <span id=${`${prefix}-count`} class=${`memory-count${over ? " over" : ""}`} data-testid="char-count">
        ${number(chars)} / ${number(state.limit)} characters${over ? ` — ${number(chars - state.limit)} over the limit` : ""}
      </span>
      ${
        canEdit
          ? html`<span class="memory-buttons">
            ${dirty ? html`<span class="memory-unsaved">Unsaved edits</span>` : null}
            <button
              type="button"
              class="pn-button"
              disabled=${!dirty || saving}
              onClick=${() => replaceDoc(state.content)}
            >Revert</button>
            <button
              type="button"
              class="pn-button primary"
              disabled=${!dirty || over || saving}
              aria-describedby=${over ? `${prefix}-count` : undefined}
              onClick=${save}
            >${saving ? "Saving…" : "Save"}</button>
          </span>`
          : null
      }
    </div>
    ${
      over && canEdit
        ? html`<p class="pn-error" role="alert">
          ${file.name} is over its limit of ${number(state.limit)} characters; shorten it to save.
        </p>`
        : null
    }
    ${
      conflict
        ? html`<div class="pn-error memory-conflict" role="alert">
          <p>${file.name} changed meanwhile (the assistant or another window saved it), so your edit was not saved.
          Reload to see the current file; your edits here will be replaced.</p>
          <button type="button" class="pn-button" onClick=${reload}>Reload ${file.name}</button>
        </div>`
        : null
    }
    ${error ? html`<p class="pn-error" role="alert">${error}</p>` : null}
    <p class="pn-status" role="status">${status}</p>
    ${canEdit ? html`<${Backups} prefix=${prefix} file=${file} names=${backups} onRestore=${restore} />` : null}
  </div>`;
}

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

export default function MemoryPanel({ api, user, onClose }) {
  const [tab, setTab] = useState("user");
  const [dirty, setDirty] = useState({});
  const [question, setQuestion] = useState(null);
  const tabs = useRef({});
  const isAdmin = Boolean(user?.is_admin);

  const onDirty = (kind, value) => setDirty((d) => (Boolean(d[kind]) === value ? d : { ...d, [kind]: value }));
  const ask = (q) => setQuestion(q);

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
  const onTabKey = (event) => {
    const i = FILES.findIndex((f) => f.kind === tab);
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
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
          ref=${(el) => (tabs.current[f.kind] = el)}
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
