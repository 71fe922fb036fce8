// Lint catches the habits a read of the code found drifting (issue 22): non-null assertions, explicit `any`,
// duplicate imports. Formatting is Prettier's job (`.prettierrc.json`), so no stylistic rules here.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: ["**/dist/**", "**/node_modules/**", ".berth/**", ".turbo/**", "tmp/**", "test-results/**", "coverage/**"],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: "module",
      globals: {
        process: "readonly",
        console: "readonly",
        URL: "readonly",
        Buffer: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        setImmediate: "readonly",
        AbortController: "readonly",
        AbortSignal: "readonly",
        fetch: "readonly",
        TextEncoder: "readonly",
        TextDecoder: "readonly",
        structuredClone: "readonly",
        queueMicrotask: "readonly",
        Response: "readonly",
        Request: "readonly",
        Headers: "readonly",
        document: "readonly",
        window: "readonly",
        performance: "readonly",
        URLSearchParams: "readonly",
        EventSource: "readonly",
        localStorage: "readonly",
        navigator: "readonly",
        crypto: "readonly",
      },
    },
    rules: {
      "no-duplicate-imports": ["error", { allowSeparateTypeImports: true }],
      // In shipped code a `!` turns a broken assumption into a TypeError far from its cause: narrow with a check
      // that throws a clear error, or handle the absence. (Test code is relaxed below.)
      "@typescript-eslint/no-non-null-assertion": "error",
      // Everywhere, tests included: an API answer is parsed with @berth/api-contract's schemas, anything else
      // gets a precise type or `unknown` and narrowing.
      "@typescript-eslint/no-explicit-any": "error",
      // `as never` passes anything anywhere and says nothing of why (issue 40): type the value, narrow it, or
      // build it so the checker sees its type.
      "no-restricted-syntax": [
        "error",
        {
          selector: "TSAsExpression > TSNeverKeyword.typeAnnotation",
          message: "No `as never`: give the value its type, or narrow it.",
        },
      ],
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      // No consistent-type-imports: `verbatimModuleSyntax` (tsconfig.base.json) already makes tsc reject a
      // type-only export imported as a value, and the code writes both `import type { … }` and inline `type`;
      // the rule would only churn imports of classes used as types.
    },
  },
  {
    // Tests, their support code and benches may assert presence with `!`: a missing value there fails the run
    // with a TypeError at the line that assumed it, which is a fair failure, and `expect(x).toBeDefined()`
    // before every read would add noise without adding a check.
    files: ["tests/**", "**/test/**"],
    rules: { "@typescript-eslint/no-non-null-assertion": "off" },
  },
);
