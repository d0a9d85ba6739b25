/** Resolves once `done()` holds or the deadline (performance.now() time) has passed; polls every 25 ms. */
export async function waitFor(done: () => boolean, deadline: number): Promise<void> {
  while (!done() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 25));
}
