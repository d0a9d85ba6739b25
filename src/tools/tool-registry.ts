/**
 * The checked, compiled set of tools a server offers. Built once at construction; immutable after.
 * Every definition problem (bad name, duplicate, schema that ajv cannot compile) throws here, at boot,
 * never on a request.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { ToolDefinition, ToolDescription, ToolInputSchema } from './tool-definition.ts';

/** The MCP tool-name rule (1 to 128 of A-Z a-z 0-9 _ - .). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** The built-in tool of service-spec 4.5. A tool of the same name given by the application replaces it. */
export const HEALTHCHECK_TOOL: ToolDefinition = {
  name: 'healthcheck',
  description: 'Reports that the tool server is up. Returns {"ok": true}.',
  input_schema: { type: 'object', properties: {} },
  handler: () => ({ ok: true }),
};

/** One argument problem, `path` a JSON Pointer into args. */
export interface ArgumentIssue {
  path: string;
  message: string;
}

export interface RegisteredTool {
  readonly definition: ToolDefinition;
  readonly description: ToolDescription;
  /** Validates (and, with ajv's useDefaults, fills defaults into) args; returns the issues, empty when valid. */
  check(args: Record<string, unknown>): ArgumentIssue[];
}

export class ToolDefinitionError extends Error {
  override name = 'ToolDefinitionError';
}

/**
 * The default validator: draft-07; unknown keywords are an error (`strictSchema`: a typo such as `minLenght`
 * fails at boot) but ordinary schemas pass (union types, `required` naming a property not in `properties`);
 * all errors reported; `default`s filled into args. Formats (`"format": "email"`) are not validated unless
 * the caller passes its own Ajv with ajv-formats added.
 */
export function createDefaultAjv(): Ajv {
  return new Ajv({
    allErrors: true,
    useDefaults: true,
    validateFormats: false,
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
  });
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Turns ajv's errors into `{path, message}` with messages shaped like `args/city must be string`. */
export function describeAjvErrors(errors: ErrorObject[] | null | undefined): ArgumentIssue[] {
  return (errors ?? []).map((e) => {
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required' && typeof params.missingProperty === 'string') {
      return {
        path: `${e.instancePath}/${escapePointer(params.missingProperty)}`,
        message: `args${e.instancePath} must have required property '${params.missingProperty}'`,
      };
    }
    if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
      return {
        path: `${e.instancePath}/${escapePointer(params.additionalProperty)}`,
        message: `args${e.instancePath} must not have property '${params.additionalProperty}'`,
      };
    }
    return { path: e.instancePath, message: `args${e.instancePath} ${e.message ?? 'is invalid'}` };
  });
}

function checkDefinition(tool: ToolDefinition, index: number): void {
  const where = `tools[${index}]${typeof tool?.name === 'string' ? ` ('${tool.name}')` : ''}`;
  if (typeof tool !== 'object' || tool === null) throw new ToolDefinitionError(`${where} must be an object`);
  if (typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name)) {
    throw new ToolDefinitionError(`${where}.name must be 1-128 characters of A-Z a-z 0-9 _ - .`);
  }
  if (typeof tool.description !== 'string' || tool.description.trim() === '')
    throw new ToolDefinitionError(`${where}.description must be a non-empty string`);
  if (typeof tool.handler !== 'function') throw new ToolDefinitionError(`${where}.handler must be a function`);
  const schema = tool.input_schema as Partial<ToolInputSchema> | undefined;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new ToolDefinitionError(`${where}.input_schema must be a JSON Schema object`);
  if (schema.type !== 'object') throw new ToolDefinitionError(`${where}.input_schema.type must be 'object'`);
  if (typeof schema.properties !== 'object' || schema.properties === null || Array.isArray(schema.properties)) {
    throw new ToolDefinitionError(`${where}.input_schema.properties must be an object`);
  }
  if ('$async' in schema) throw new ToolDefinitionError(`${where}.input_schema must not be an $async schema`);
}

export class ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();

  /** Throws ToolDefinitionError on any invalid definition or schema. `ajv` is used for compiling only. */
  constructor(tools: readonly ToolDefinition[], ajv: Ajv = createDefaultAjv()) {
    if (!Array.isArray(tools)) throw new ToolDefinitionError('tools must be an array');
    const seen = new Set<string>();
    tools.forEach((tool, i) => {
      checkDefinition(tool, i);
      if (seen.has(tool.name)) throw new ToolDefinitionError(`tools[${i}]: duplicate tool name '${tool.name}'`);
      seen.add(tool.name);
    });
    const all = seen.has(HEALTHCHECK_TOOL.name) ? [...tools] : [HEALTHCHECK_TOOL, ...tools];
    for (const tool of all) this.#tools.set(tool.name, this.#compile(tool, ajv));
  }

  #compile(tool: ToolDefinition, ajv: Ajv): RegisteredTool {
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(tool.input_schema);
    } catch (err) {
      throw new ToolDefinitionError(
        `tool '${tool.name}': invalid input_schema: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    // A deep copy, so later mutation of the application's object cannot change what clients are shown.
    const description: ToolDescription = structuredClone({
      name: tool.name,
      description: tool.description,
      input_schema: tool.input_schema,
    });
    return {
      definition: tool,
      description,
      check: (args) => (validate(args) ? [] : describeAjvErrors(validate.errors)),
    };
  }

  get(name: string): RegisteredTool | undefined {
    return this.#tools.get(name);
  }

  /** Every tool, the built-in healthcheck first, in definition order. */
  describe(): ToolDescription[] {
    return [...this.#tools.values()].map((t) => t.description);
  }
}
