#!/usr/bin/env node
// Entry point of the `hearth` command: registers tsx (the TypeScript loader) and runs the CLI.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/hearth.ts');
process.exitCode = await runCli(process.argv.slice(2));
