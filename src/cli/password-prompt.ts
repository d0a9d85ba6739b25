/**
 * Reads a password for the CLI: on a terminal, asked twice without echo; otherwise the whole of stdin,
 * less one trailing newline (`printf '%s' "$PW" | hearth users create ...` and `echo "$PW" | ...` both work).
 */
export async function readPassword(prompt: string): Promise<string> {
  if (process.stdin.isTTY) {
    const first = await askHidden(prompt);
    const second = await askHidden('Again: ');
    if (first !== second) throw new Error('the two passwords differ');
    return first;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function askHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  stdin.setRawMode(true); // before the prompt: nothing typed after it may echo
  process.stderr.write(prompt);
  stdin.resume();
  stdin.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (text: string) => {
      for (const ch of text) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}
