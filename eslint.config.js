// ESLint (flat config) for the site's JavaScript: browser ES modules, plus the
// node bridge the parity tests run. `make lint-js` runs it with prettier --check.
import js from "@eslint/js";
import globals from "globals";

export default [
  {
    // Vendored and built files are not ours to lint.
    ignores: ["dist/**", "node_modules/**", "test-artifacts/**", ".venv/**"],
  },
  js.configs.recommended,
  {
    files: ["site/static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: "module",
      globals: { ...globals.browser, ...globals.worker },
    },
    rules: {
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "none" }],
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-var": "error",
      "prefer-const": ["error", { destructuring: "all" }],
    },
  },
  {
    // A function fits on a screen (STYLE.md): none over 200 lines.
    files: ["site/static/js/**/*.js"],
    rules: { "max-lines-per-function": ["error", { max: 200 }] },
  },
  {
    files: ["tests/**/*.mjs", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2024, sourceType: "module", globals: { ...globals.node } },
  },
];
