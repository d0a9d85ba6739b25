/**
 * The benches' closed-loop load: `clients` concurrent loops, each sending its next request as soon as its last one
 * has ended, until `durationS` has passed since the call. `send(n, client)` sends request `n` (numbered from 0 over
 * all loops) for loop `client`. With `atLeastOnce`, every loop sends one request even when it starts past the
 * deadline (a level that must measure each client); otherwise such a loop sends nothing. Resolves when all have ended.
 */
export async function closedLoop(
  o: { clients: number; durationS: number; atLeastOnce?: boolean },
  send: (n: number, client: number) => Promise<void>,
): Promise<void> {
  const deadline = performance.now() + o.durationS * 1000;
  let issued = 0;
  await Promise.all(
    Array.from({ length: o.clients }, async (_, client) => {
      for (let sent = 0; (o.atLeastOnce === true && sent === 0) || performance.now() < deadline; sent++)
        await send(issued++, client);
    }),
  );
}
