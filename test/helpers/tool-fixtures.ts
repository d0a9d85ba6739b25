import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { FunctionTool } from '../../src/protocol/chat-request.ts';

/** The weather function every form below declares: its name and description, and the cities it knows. */
const GET_WEATHER = { name: 'get_weather', description: 'Current weather in a city' };
const CITY = { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] };

/** Two declared functions whose arguments a random walk (or random weights) can complete quickly. */
export const WEATHER_TOOLS: FunctionTool[] = [
  {
    ...GET_WEATHER,
    parameters: {
      type: 'object',
      properties: { city: CITY, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
      additionalProperties: false,
    },
    strict: false,
  },
  {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 4 } }, required: ['zone'] },
    strict: true,
  },
];

/**
 * get_weather as the official SDK sends a chat-completions tool, strict, every argument required: a call the
 * grammar forces names a city and a unit ('c' or 'f') and nothing else.
 */
export const STRICT_WEATHER_TOOL = {
  type: 'function',
  function: {
    ...GET_WEATHER,
    parameters: {
      type: 'object',
      properties: { city: CITY, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
    strict: true,
  },
} satisfies ChatCompletionTool;
