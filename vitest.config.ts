import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against sources, so `npm test` needs no build step.
    alias: {
      // Subpaths before the package itself: vite takes the first alias that matches.
      "@berth/backstage/scaffolder": fileURLToPath(
        new URL("./packages/backstage/src/scaffolder/module.ts", import.meta.url),
      ),
      "@berth/backstage/catalog": fileURLToPath(new URL("./packages/backstage/src/catalog/module.ts", import.meta.url)),
      "@berth/backstage": src("backstage"),
      "@berth/core": src("core"),
      "@berth/config": src("config"),
      "@berth/gitops": src("gitops"),
      "@berth/azure": src("azure"),
      "@berth/api-contract": src("api-contract"),
      "@berth/kube-runtime": src("kube-runtime"),
      "@berth/logging": src("logging"),
      "@berth/kustomize": src("kustomize"),
    },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts", "tests/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
