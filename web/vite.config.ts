/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// The console is served under /app/ (by `go run .` from the embedded dist/, and from S3 on AWS),
// so every asset URL carries that base. Hashed file names make the build reproducible: the
// committed dist/ must equal a fresh `npm ci && npm run build` (scripts/test.sh checks).
export default defineConfig({
  base: '/app/',
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
