/** The small readers and writers every vendor dialect's JSON uses. Pure. */

export type JsonObject = Record<string, unknown>;
export const isObj = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** Random hex, for vendor ids in bodies. */
export function fakeId(length = 24): string {
  let out = '';
  while (out.length < length) out += Math.random().toString(16).slice(2);
  return out.slice(0, length);
}
