import { expect, inject, it } from "vitest";
import { bytes, type BenchLine } from "./report.ts";

// P10: the deploy bundle ≤ 1 MiB gzip (QUALITY.md). Built by bench/node/bundle-size.ts (Node, the
// bench's global setup) with `wrangler deploy --dry-run`, exactly what a deployment uploads;
// this file only reports it. What each provider costs is in bench/README.md.

const TARGET_GZIP = 1024 * 1024;

it("P10 deploy bundle size", ({ task }) => {
  const measured = inject("bundleSize");
  if ("error" in measured) throw new Error(`wrangler deploy --dry-run failed: ${measured.error}`);
  expect(measured.modules).toBeGreaterThan(0);
  const lines: BenchLine[] = [
    {
      id: "P10",
      what: "deploy bundle, gzip (every hosted provider, the scripted models, the engine)",
      case: `wrangler deploy --dry-run; ${measured.modules} modules, ${bytes(measured.uploadBytes)} uncompressed (wrangler: ${measured.wranglerLine})`,
      median: bytes(measured.gzipBytes),
      p95: "—",
      target: "≤ 1 MiB gzip",
      met: measured.gzipBytes <= TARGET_GZIP,
      samples: 1,
    },
  ];
  task.meta.benchLines = lines;
});
