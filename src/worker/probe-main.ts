/**
 * The child side of engine/probe-child.ts: answers the request in argv[2] with one JSON line on stdout and exit
 * code 0, or writes the error to stderr and exits 1. Exits at once, so that no library's threads keep it alive.
 */
export function serveProbe<Req, Answer>(answer: (req: Req) => Promise<Answer>): void {
  answer(JSON.parse(process.argv[2] ?? '') as Req).then(
    (a) => {
      process.stdout.write(`${JSON.stringify(a)}\n`);
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
