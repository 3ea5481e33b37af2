// ESLint for the web client's own modules (`make lint`): the recommended rules, browser
// globals, ES modules. The bundles in static/vendor/ are third-party code, not linted.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["static/vendor/**"] },
  js.configs.recommended,
  {
    files: ["**/*.js", "**/*.mjs"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      eqeqeq: ["error", "smart"],
      "no-unused-vars": ["error", { argsIgnorePattern: "^_", caughtErrors: "none" }],
      "no-var": "error",
      "prefer-const": "error",
    },
  },
  { files: ["eslint.config.mjs"], languageOptions: { globals: { ...globals.node } } },
];
