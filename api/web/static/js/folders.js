// @ts-check
// The Folders section: create with a palette color, rename/recolor/delete from the folder's
// menu, reorder by drag and drop (or Move up/down), open/closed per device; chats dropped on
// a folder move into it.
import { html, useRef, useState } from "../vendor/preact.js";
import { api } from "./api.js";
import * as actions from "./actions.js";
import { ChatList, RenameForm } from "./chatlist.js";
import { Icon } from "./icons.js";
import { Menu } from "./menu.js";
import { loadFolders, reload, setCollapsed } from "./lists.js";
import { folderCollapsed, folders, palette, sessions, unfile } from "./state.js";
import { toast } from "./toast.js";
import { cx, onValue } from "./util.js";

/** @typedef {import("./state.js").Folder} Folder */

const hexOf = (/** @type {string} */ color) => palette.value.find((c) => c.name === color)?.hex || "#888";

async function saveOrder(/** @type {string[]} */ ids) {
  const byId = new Map(folders.value.map((f) => [f.id, f]));
  folders.value = ids.map((id) => /** @type {Folder} */ (byId.get(id)));
  try {
    const body = await api.put("/folders/order", { ids });
    folders.value = body.items;
  } catch (error) {
    toast(`Could not reorder: ${error.message}`, { error: true });
    await loadFolders();
  }
}

/** @param {{ onDone: () => void }} props */
export function NewFolderForm({ onDone }) {
  const [name, setName] = useState("");
  const [color, setColor] = useState(palette.value[0]?.name);
  const [error, setError] = useState(/** @type {string | null} */ (null));

  async function submit(/** @type {SubmitEvent} */ event) {
    event.preventDefault();
    try {
      await api.post("/folders", { name: name.trim(), color });
      await loadFolders();
      onDone();
    } catch (e) {
      setError(e.message);
    }
  }

  return html`<form class="new-folder" onSubmit=${submit} aria-label="New folder">
    <input aria-label="Folder name" placeholder="Folder name" required maxlength="100" autofocus
      value=${name} onInput=${onValue(setName)}
      onKeyDown=${(/** @type {KeyboardEvent} */ e) => e.key === "Escape" && onDone()} />
    <div class="palette" role="radiogroup" aria-label="Folder color">
      ${palette.value.map(
        (c) => html`<button type="button" role="radio" key=${c.name}
        aria-checked=${c.name === color ? "true" : "false"} aria-label=${c.name} title=${c.name}
        class="swatch-button" style=${{ background: c.hex }} onClick=${() => setColor(c.name)}></button>`,
      )}
    </div>
    ${error && html`<p class="error small" role="alert">${error}</p>`}
    <div class="form-actions">
      <button type="submit" class="primary small">Create</button>
      <button type="button" class="small" onClick=${onDone}>Cancel</button>
    </div>
  </form>`;
}

/** @param {{ activeId: string | null }} props */
export function FolderList({ activeId }) {
  const [dragging, setDragging] = useState(/** @type {string | null} */ (null));
  const [over, setOver] = useState(/** @type {string | null} */ (null));
  const ids = folders.value.map((f) => f.id);

  function move(/** @type {string} */ id, /** @type {number} */ to) {
    const rest = ids.filter((x) => x !== id);
    rest.splice(Math.max(0, Math.min(to, rest.length)), 0, id);
    if (rest.join() !== ids.join()) saveOrder(rest);
  }

  function drop(/** @type {DragEvent} */ event, /** @type {string} */ target) {
    event.preventDefault();
    setOver(null);
    const transfer = /** @type {DataTransfer} */ (event.dataTransfer);
    const session = transfer.getData("application/x-eonyx-session");
    if (session) return actions.moveTo(session, target);
    const folder = transfer.getData("application/x-eonyx-folder") || dragging;
    setDragging(null);
    if (!folder || folder === target) return;
    move(folder, ids.filter((x) => x !== folder).indexOf(target) + (ids.indexOf(folder) < ids.indexOf(target) ? 1 : 0));
  }

  if (!folders.value.length) return html`<p class="empty">No folders yet.</p>`;
  return html`<ul class="folders" role="list" aria-label="Folders">
    ${folders.value.map(
      (folder, index) => html`<${Folder} key=${folder.id} folder=${folder}
      activeId=${activeId} over=${over === folder.id}
      onDragStart=${(/** @type {DragEvent} */ e) => {
        setDragging(folder.id);
        const transfer = /** @type {DataTransfer} */ (e.dataTransfer);
        transfer.setData("application/x-eonyx-folder", folder.id);
        transfer.effectAllowed = "move";
      }}
      onDragOver=${(/** @type {DragEvent} */ e) => {
        e.preventDefault();
        setOver(folder.id);
      }}
      onDragLeave=${() => setOver(null)}
      onDrop=${(/** @type {DragEvent} */ e) => drop(e, folder.id)}
      onDragEnd=${() => {
        setDragging(null);
        setOver(null);
      }}
      moveUp=${index > 0 ? () => move(folder.id, index - 1) : null}
      moveDown=${index < ids.length - 1 ? () => move(folder.id, index + 1) : null} />`,
    )}
  </ul>`;
}

/**
 * A folder: its head (toggle, menu) and, open, its chats. `drag` holds the drag and drop handlers.
 * @param {{ folder: Folder, activeId: string | null, over: boolean, moveUp: (() => void) | null,
 *   moveDown: (() => void) | null, [handler: string]: unknown }} props
 */
function Folder({ folder, activeId, over, moveUp, moveDown, ...drag }) {
  const [renaming, setRenaming] = useState(false);
  const collapsed = folderCollapsed(folder.id);
  const toggle = () => setCollapsed("folder", folder.id, !collapsed);

  async function update(/** @type {{ name?: string, color?: string }} */ changes) {
    try {
      await api.patch(`/folders/${folder.id}`, changes);
      await loadFolders();
    } catch (error) {
      toast(`Could not change the folder: ${error.message}`, { error: true });
    }
  }

  async function remove() {
    if (!confirm(`Delete the folder “${folder.name}”? Its chats stay, unfiled.`)) return;
    try {
      await api.del(`/folders/${folder.id}`);
      unfile(folder.id);
      await loadFolders();
      await reload("chats"); // its chats, unfiled (never deleted), some never loaded here
    } catch (error) {
      toast(`Could not delete the folder: ${error.message}`, { error: true });
    }
  }

  /** @type {import("./menu.js").MenuItem[]} */
  const items = [
    { label: "Rename", run: () => setRenaming(true) },
    {
      label: "Color",
      items: palette.value.map((c) => ({
        label: c.name,
        swatch: c.hex,
        disabled: c.name === folder.color,
        run: () => update({ color: c.name }),
      })),
    },
    ...(moveUp ? [{ label: "Move up", run: moveUp }] : []),
    ...(moveDown ? [{ label: "Move down", run: moveDown }] : []),
    { label: "Delete", danger: true, run: remove },
  ];
  return html`<li class=${cx("folder", over && "drop-target")} data-folder=${folder.id}
    onDragOver=${drag.onDragOver} onDragLeave=${drag.onDragLeave} onDrop=${drag.onDrop}>
    <div class="folder-head" draggable=${renaming ? "false" : "true"} onDragStart=${drag.onDragStart}
      onDragEnd=${drag.onDragEnd}>
      ${
        renaming
          ? html`<${RenameForm} title=${folder.name} label="Folder name"
            onDone=${(/** @type {string | null} */ v) => {
              setRenaming(false);
              if (v) update({ name: v });
            }} />`
          : html`<button type="button" class="folder-toggle" aria-expanded=${collapsed ? "false" : "true"}
            onClick=${toggle}>
            <span class=${cx("chevron", !collapsed && "open")}><${Icon} name="chevron" size=${14} /></span>
            <span class="folder-dot" style=${{ background: hexOf(folder.color) }}></span>
            <span class="title-text">${folder.name}</span>
          </button>
          <${Menu} label=${`Actions for folder ${folder.name}`} items=${items} className="row-menu" />`
      }
    </div>
    ${
      !collapsed &&
      html`<div class="folder-chats">
      <${ChatList} listKey=${`folder:${folder.id}`} activeId=${activeId}
        label=${`Chats in ${folder.name}`} empty="Empty: drop chats here." /></div>`
    }
  </li>`;
}

export function useDropOut() {
  // Dropping a chat on the Chats section takes it out of its folder.
  const ref = useRef(null);
  return {
    ref,
    onDragOver: (/** @type {DragEvent} */ e) =>
      e.dataTransfer?.types.includes("application/x-eonyx-session") && e.preventDefault(),
    onDrop: (/** @type {DragEvent} */ e) => {
      const session = e.dataTransfer?.getData("application/x-eonyx-session");
      if (!session) return;
      e.preventDefault();
      if (sessions.peek().get(session)?.folder_id) actions.moveTo(session, null);
    },
  };
}
