// @ts-check
// Small helpers: the fixed time format, this device's id, class names.

const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");

/** `YYYY/MM/DD HH:mm`, 24-hour, local time, whatever the browser's language. */
export function formatTime(/** @type {string | null | undefined} */ iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

const DEVICE_KEY = "eonyx.device";

/** This browser's device id (kept in localStorage): the sidebar's collapse state is per device. */
export function deviceId() {
  let id = null;
  try {
    id = localStorage.getItem(DEVICE_KEY);
  } catch {
    /* storage disabled: a fresh id each load */
  }
  if (!id || !/^[A-Za-z0-9._:-]{1,64}$/.test(id)) {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    id = "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    try {
      localStorage.setItem(DEVICE_KEY, id);
    } catch {
      /* ignore */
    }
  }
  return id;
}

export const cx = (/** @type {unknown[]} */ ...names) => names.filter(Boolean).join(" ");

/**
 * @param {number} n
 * @param {string} one
 * @param {string} [many]
 */
export function plural(n, one, many = one + "s") {
  return `${n} ${n === 1 ? one : many}`;
}

/** What an input holds, from its input event. */
export function inputValue(/** @type {Event} */ event) {
  return /** @type {HTMLInputElement} */ (event.currentTarget).value;
}

/** An input's event handler that gives its value to `set`. */
export const onValue = (/** @type {(value: string) => void} */ set) => (/** @type {Event} */ event) =>
  set(inputValue(event));

/** A session's title as shown (a new chat has none yet). */
/** @param {{ title?: string | null, temporary?: boolean } | null | undefined} session */
export function titleOf(session) {
  return session?.title || (session?.temporary ? "Temporary chat" : "New chat");
}

/** Save a Blob as a download (the export). */
/**
 * @param {Blob} blob
 * @param {string} name
 */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Put `text` on the clipboard; throws when the page may not (no secure context, refused). */
export async function copyText(/** @type {string} */ text) {
  if (!navigator.clipboard) throw new Error("the clipboard is not available on this page");
  await navigator.clipboard.writeText(text);
}
