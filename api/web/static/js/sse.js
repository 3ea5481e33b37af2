// @ts-check
// Server-sent events (text/event-stream) read as the format says
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): a streamed turn's body.
// The same vectors test this decoder and the server's (shared/core/sse.py, tests/sse_vectors.json);
// unlike that one, this one follows the format where the server's is lenient on purpose: a lone
// CR ends a line, and an event the body ends in without its blank line is dropped.
// Nothing here touches the DOM, so Node imports it as it is (tests/web/test_sse_decoder.py).

/**
 * One server-sent event: its name (`message` when it gives none) and its `data` lines joined with LF.
 * @typedef {{ name: string, data: string }} ServerEvent
 */

const LINE_BREAK = /\r\n|\r|\n/g;

/** Events from a body fed in chunks of bytes, cut anywhere (inside a character or a CRLF too). */
export class Decoder {
  #text = new TextDecoder(); // UTF-8; drops the byte-order mark that may open the body
  #pending = ""; // the start of a line whose end has not come yet
  #afterCR = false; // the last chunk ended in CR: an LF opening the next one ends no line
  #name = "";
  #data = "";

  /**
   * The events this chunk completes.
   * @param {Uint8Array} chunk
   * @returns {ServerEvent[]}
   */
  feed(chunk) {
    let text = this.#pending + this.#text.decode(chunk, { stream: true });
    if (this.#afterCR && text.startsWith("\n")) text = text.slice(1);
    if (!text) return [];
    this.#afterCR = false;
    /** @type {ServerEvent[]} */
    const events = [];
    let start = 0;
    for (const match of text.matchAll(LINE_BREAK)) {
      const event = this.#line(text.slice(start, match.index));
      if (event) events.push(event);
      start = match.index + match[0].length;
      this.#afterCR = match[0] === "\r" && start === text.length;
    }
    this.#pending = text.slice(start);
    return events;
  }

  /**
   * @param {string} line
   * @returns {ServerEvent | null}
   */
  #line(line) {
    if (!line) return this.#dispatch();
    if (line.startsWith(":")) return null; // a comment (a keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.#name = value;
    else if (field === "data") this.#data += `${value}\n`;
    return null; // `id`, `retry` and unknown fields: nothing this client uses
  }

  /** @returns {ServerEvent | null} */
  #dispatch() {
    const event = this.#data ? { name: this.#name || "message", data: this.#data.slice(0, -1) } : null;
    this.#name = "";
    this.#data = "";
    return event;
  }
}

/**
 * Each event of a streamed body, as it completes.
 * @param {ReadableStream<Uint8Array>} body
 * @returns {AsyncGenerator<ServerEvent>}
 */
export async function* readEvents(body) {
  const reader = body.getReader();
  const decoder = new Decoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    yield* decoder.feed(value);
  }
}
