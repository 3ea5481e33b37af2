// @ts-check
// Panels opened from the sidebar footer (the memory panel, the model settings, the account): modules in
// /static/panels/ loaded on first use, each exporting a default component taking
// {api, user, onClose}. The panel draws its own header and close button and calls onClose
// when it may close (after asking about unsaved edits). A module that fails to load shows
// an error here; the page goes on.
import { html, useEffect, useRef, useState } from "../vendor/preact.js";
import { api } from "./api.js";
import { Icon, Spinner } from "./icons.js";

export const PANELS = {
  memory: { title: "Agent memory", module: "/static/panels/memory.js" },
  models: { title: "Model settings", module: "/static/panels/models.js" },
  account: { title: "Account", module: "/static/panels/account.js" },
};

/** @typedef {keyof typeof PANELS} PanelName */
/**
 * What a panel module's default component takes.
 * @typedef {{ api: typeof api, user: import("./api.js").User, onClose: () => void }} PanelProps
 */
/**
 * The panel's module once loaded, or why it could not be.
 * @typedef {{ Component: import("../vendor/preact.js").ComponentType<PanelProps> | null, error: string | null }} Loaded
 */

/** @param {{ name: PanelName, user: import("./api.js").User, onClose: () => void }} props */
export function PanelDialog({ name, user, onClose }) {
  const panel = PANELS[name];
  const [loaded, setLoaded] = useState(/** @type {Loaded} */ ({ Component: null, error: null }));
  const dialog = useRef(/** @type {HTMLDialogElement | null} */ (null));

  useEffect(() => {
    let live = true;
    import(panel.module).then(
      (module) => live && setLoaded({ Component: module.default, error: null }),
      (error) => live && setLoaded({ Component: null, error: String(error.message || error) }),
    );
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => {
      live = false;
    };
  }, [name]);

  function cancel(/** @type {Event} */ event) {
    // Escape closes only what the shell drew itself; a loaded panel decides (unsaved edits).
    if (loaded.Component) event.preventDefault();
    else onClose();
  }

  const { Component, error } = loaded;
  return html`<dialog ref=${dialog} class="panel-dialog" aria-label=${panel.title} onCancel=${cancel}>
    ${
      Component
        ? html`<${Component} api=${api} user=${user} onClose=${onClose} />`
        : html`<div class="panel-fallback">
          <header class="panel-head"><h2>${panel.title}</h2>
            <button class="icon-button" type="button" aria-label="Close" onClick=${onClose}>
              <${Icon} name="close" /></button></header>
          ${
            error
              ? html`<p class="error" role="alert">The ${panel.title.toLowerCase()} panel could not be loaded: ${error}</p>`
              : html`<p><${Spinner} label="Loading the panel" /> Loading…</p>`
          }
        </div>`
    }
  </dialog>`;
}
