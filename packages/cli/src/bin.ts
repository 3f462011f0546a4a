#!/usr/bin/env node
// The published `sbx` (built to dist/bin.js): loading main.ts runs the CLI. In the workspace,
// bin/sbx.mjs runs the same main.ts from source through tsx instead.
await import('./main.js');
