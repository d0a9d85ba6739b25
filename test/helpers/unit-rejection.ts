import { expect } from 'vitest';

/**
 * The error `run` rejects (or throws) with, expected to be a `type`; the test fails, saying `because`, when `run`
 * settles without one or with another kind. The async counterpart of thrownBy (thrown.ts).
 */
export async function rejectionBy<E extends Error>(
  run: () => unknown,
  type: abstract new (...args: never[]) => E,
  because?: string,
): Promise<E> {
  const err = await Promise.resolve()
    .then(run)
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(err, because).toBeInstanceOf(type);
  return err as E;
}
