// @ts-check
// The API as the web client (and the panels) call it: same origin, the session cookie, and
// the CSRF header on every request that changes state.
//
//   const folders = await api.get("/folders");          // paths are under /api/v1
//   await api.put("/memory/user", {content, version});  // JSON in, JSON out (null for 204)
//   try { ... } catch (e) { if (e instanceof ApiError && e.status === 409) ... e.message }
//
// Every error is an ApiError carrying the server's {error: {code, message}} and the status.
// A 401 anywhere means the session ended: `onSignedOut` listeners are told (the app shows
// the sign-in page).

export const PREFIX = "/api/v1";

/**
 * The person signed in (GET /auth/session's `user`).
 * @typedef {{ id: string, username: string, is_admin: boolean }} User
 */
/**
 * What signing in answers (POST and GET /auth/session).
 * @typedef {{ user: User, csrf_token: string, must_change_password?: boolean }} SignedIn
 */

/** An API call that failed: the HTTP status (0: the server could not be reached), the
 * server's error code and its details (a new chat's failed first message: `session_id`). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string | null | undefined} code
   * @param {string | null | undefined} message
   * @param {{ session_id?: string, [detail: string]: unknown } | null} [details]
   */
  constructor(status, code, message, details = null) {
    super(message || `request failed (${status})`);
    this.status = status;
    this.code = code || "error";
    this.details = details;
  }
}

/** @type {string | null} */
let csrf = null;
/** @type {Set<(error: ApiError) => void>} */
const signedOut = new Set();

export function setCsrf(/** @type {string | null} */ token) {
  csrf = token;
}

/**
 * The CSRF header for a request made without `request` (a streamed turn).
 * @returns {Record<string, string>}
 */
export function csrfHeader() {
  return csrf ? { "X-CSRF-Token": csrf } : {};
}

/**
 * Be told when a request answers 401 (the sign-in ended); returns the unsubscribe.
 * @param {(error: ApiError) => void} listener
 */
export function onSignedOut(listener) {
  signedOut.add(listener);
  return () => signedOut.delete(listener);
}

/**
 * @param {string} method
 * @param {Record<string, string>} extra
 * @returns {Record<string, string>}
 */
function headers(method, extra) {
  /** @type {Record<string, string>} */
  const out = { Accept: "application/json", ...extra };
  if (method !== "GET" && method !== "HEAD" && csrf) out["X-CSRF-Token"] = csrf;
  return out;
}

/**
 * The ApiError a failed response stands for (its JSON body's code and message when it has one).
 * @param {Response} response
 */
export async function errorOf(response) {
  let code = null;
  let message;
  let details = null;
  try {
    const body = await response.json();
    code = body?.error?.code;
    message = body?.error?.message;
    details = body?.error?.details || null;
  } catch {
    message = response.status === 413 ? "the upload is too large" : null;
  }
  return new ApiError(response.status, code, message || `${response.status} ${response.statusText}`, details);
}

/**
 * @typedef {object} RequestOptions
 * @property {AbortSignal} [signal]
 * @property {boolean} [raw] the Response itself, unread
 */

/**
 * One request; `body` is sent as JSON, or as is when it is FormData or a Blob. Answers the
 * JSON body (the text when it is not JSON, null for 204), or throws an ApiError.
 * @param {string} method
 * @param {string} path under /api/v1
 * @param {unknown} [body]
 * @param {RequestOptions} [options]
 * @returns {Promise<any>}
 */
export async function request(method, path, body, { signal, raw = false } = {}) {
  /** @type {Record<string, string>} */
  const extra = {};
  let payload;
  if (body instanceof FormData || body instanceof Blob) payload = body;
  else if (body !== undefined) {
    extra["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(PREFIX + path, {
      method,
      body: payload,
      headers: headers(method, extra),
      credentials: "same-origin",
      signal,
    });
  } catch (error) {
    if (error instanceof Error && error.name === "AbortError") throw error;
    throw new ApiError(0, "network", "cannot reach the server");
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401 && !path.startsWith("/auth/session")) {
      for (const listener of signedOut) listener(error);
    }
    throw error;
  }
  if (raw) return response;
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  return type.includes("json") ? response.json() : response.text();
}

/** @typedef {(path: string, options?: RequestOptions) => Promise<any>} Read */
/** @typedef {(path: string, body?: unknown, options?: RequestOptions) => Promise<any>} Write */

/** @type {{ get: Read, post: Write, put: Write, patch: Write, del: Read, request: typeof request }} */
export const api = {
  get: (path, options) => request("GET", path, undefined, options),
  post: (path, body, options) => request("POST", path, body, options),
  put: (path, body, options) => request("PUT", path, body, options),
  patch: (path, body, options) => request("PATCH", path, body, options),
  del: (path, options) => request("DELETE", path, undefined, options),
  request,
};
export default api;
