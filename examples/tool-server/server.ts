/**
 * Deployable entry point of the example tool server. Configuration comes from the environment only
 * (see README.md); a missing or invalid setting stops the process at boot with a message saying which.
 *
 *   PORT=3000 TOOL_SERVER_API_KEY=... HEARTH_BASE_URL=https://... HEARTH_API_KEY=hk_... HEARTH_MODEL=local/stories260K \
 *     node --import tsx examples/tool-server/server.ts
 */
import { createExampleToolServer, type ExampleConfig } from './app.ts';
import { readExampleConfig } from './config.ts';

async function main(): Promise<void> {
  let config: ExampleConfig;
  try {
    config = readExampleConfig(process.env);
  } catch (err) {
    process.stderr.write(`example tool server: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const server = createExampleToolServer(config);
  await server.listen();
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

await main();
