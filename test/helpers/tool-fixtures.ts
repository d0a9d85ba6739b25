import type { FunctionTool } from '../../src/protocol/chat-request.ts';

/** Two declared functions whose arguments a random walk (or random weights) can complete quickly. */
export const WEATHER_TOOLS: FunctionTool[] = [
  {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
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
