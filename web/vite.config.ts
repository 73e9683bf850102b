/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// The console is served under /app/ (by `go run .` from the embedded dist/, and from S3 on AWS),
// so every asset URL carries that base. Hashed file names make the build reproducible: the
// committed dist/ must equal a fresh `npm ci && npm run build` (scripts/test.sh checks).
export default defineConfig({
  base: '/app/',
  // `npm run dev` proxies the API to a running service, so the console stays same-origin.
  server: {
    proxy: Object.fromEntries(
      ['/console', '/v1', '/health'].map((p) => [p, process.env.ROADEVENTS_API ?? 'http://127.0.0.1:8080']),
    ),
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  test: {
    environment: 'happy-dom',
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});
