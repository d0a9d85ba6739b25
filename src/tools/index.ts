/**
 * hearth/tools: the tool-server kit (service-spec 4.5). A compliant tool server in a dozen lines:
 *
 *   import { createToolServer, defineTool } from 'hearth/tools';
 *   const server = createToolServer({ apiKey: process.env.TOOL_SERVER_API_KEY ?? null, tools: [defineTool({ ... })] });
 *   await server.listen(); // on PORT
 */
export {
  createToolServer,
  DEFAULT_TOOL_SERVER_OPTIONS,
  HEALTH_PATH,
  TOOL_CALL_PATH,
  TOOL_LIST_PATH,
} from './tool-server.ts';
export type { ToolServer, ToolServerOptions } from './tool-server.ts';
export { defineTool } from './tool-definition.ts';
export type {
  JsonValue,
  ToolContext,
  ToolDefinition,
  ToolDescription,
  ToolInputSchema,
  ToolTransport,
} from './tool-definition.ts';
export { ToolError, toToolErrorBody } from './tool-errors.ts';
export type { ToolErrorBody, ToolErrorOptions } from './tool-errors.ts';
export { HEALTHCHECK_TOOL, ToolDefinitionError, createDefaultAjv } from './tool-registry.ts';
