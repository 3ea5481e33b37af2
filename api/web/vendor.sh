#!/usr/bin/env bash
# Vendor the web client's third-party code: `npm ci` from the lockfile, then each entry of
# vendor-src/ bundled by esbuild into one ES module in static/vendor/ (committed, served as
# is: no Node.js at run time, nothing from a CDN), and the tests' copy of axe-core. Same
# lockfile, same bytes: CI re-runs this and fails on any difference.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
out=static/vendor
# The bundles' types (*.d.ts, written by hand: the packages' own types, re-exported as each
# entry does) stay: tsc reads them instead of the minified bundles.
find "$out" -type f ! -name '*.d.ts' -delete
for entry in vendor-src/*.js; do
  node_modules/.bin/esbuild "$entry" --bundle --format=esm --minify --target=es2020 \
    --legal-comments=eof --charset=utf8 --log-level=warning --outfile="$out/$(basename "$entry")"
done
# axe-core runs in the page for the accessibility tests only: kept beside them, never served.
cp node_modules/axe-core/axe.min.js ../../tests/web/axe.min.js
# Code highlighting colours, light and dark after the system's preference.
{
  echo "@media (prefers-color-scheme: light) {"
  cat node_modules/highlight.js/styles/github.min.css
  echo "}"
  echo "@media (prefers-color-scheme: dark) {"
  cat node_modules/highlight.js/styles/github-dark.min.css
  echo "}"
} > "$out/highlight.css"
