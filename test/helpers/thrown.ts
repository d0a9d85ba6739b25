import { expect } from 'vitest';

/** The error `run` throws, expected to be a `type`; fails the test when `run` throws nothing. */
export function thrownBy<E extends Error>(run: () => unknown, type: abstract new (...args: never[]) => E): E {
  try {
    run();
  } catch (e) {
    expect(e).toBeInstanceOf(type);
    return e as E;
  }
  throw new Error(`expected a ${type.name}`);
}

/** A validation refusal: 400, naming `param` with `code`, and saying the parameter (its top-level name) in the message. */
export function expectParamRefusal(
  e: { status: number; param: string | null; code: string | null; message: string },
  param: string,
  code: string,
): void {
  expect(e.status).toBe(400);
  expect(e.param).toBe(param);
  expect(e.code).toBe(code);
  expect(e.message).toContain(param.split('[')[0]!);
}
