// Drives a running Hearth image (started by .ci/image): waits for "model ready", then a chat completion, a
// streamed one and /metrics, each checked. Prints the cold start (container start to /health 200). Exit 1 on
// any failure, with the server's log tail. Usage: node .ci/image-smoke.mjs PORT START_NS SERVE_LOG KEY DATA_DIR
// (DATA_DIR: the host directory mounted at the container's /data)
import fs from 'node:fs';

const [port, startNs, logPath, key, dataDir] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const fail = (why) => {
  console.error(`image smoke: ${why}`);
  try {
    console.error(fs.readFileSync(logPath, 'utf8').split('\n').slice(-30).join('\n'));
  } catch {}
  process.exit(1);
};
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

let health;
for (let i = 0; i < 600; i++) {
  try {
    const r = await fetch(`${base}/health`);
    if (r.status === 200) {
      health = await r.json();
      break;
    }
  } catch {}
  await new Promise((r) => setTimeout(r, 200));
}
if (!health) fail('no 200 from /health within 120 s');
const coldMs = (process.hrtime.bigint() - BigInt(startNs)) / 1_000_000n;
const model = health.model;
const log = fs.readFileSync(logPath, 'utf8');
if (!/"msg":"model ready"/.test(log)) fail('/health is 200 but the log has no "model ready" line');
// The server writes its master key file into its data dir at start: missing here, it is not serving the mounted one.
if (!fs.existsSync(`${dataDir}/master.key`))
  fail(`the server is not using the mounted data dir (no master.key in ${dataDir})`);
const front = /"msg":"listening".*"front":"(\w+)"/.exec(log)?.[1];

const chat = await fetch(`${base}/api/inference/v1/chat/completions`, {
  method: 'POST',
  headers: auth,
  body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8 }),
});
const chatBody = await chat.json();
if (chat.status !== 200 || chatBody.object !== 'chat.completion' || !(chatBody.usage?.completion_tokens > 0))
  fail(`chat completion: ${chat.status} ${JSON.stringify(chatBody)}`);

const stream = await fetch(`${base}/api/inference/v1/chat/completions`, {
  method: 'POST',
  headers: auth,
  body: JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Once upon a time' }],
    max_tokens: 8,
    stream: true,
  }),
});
const text = await stream.text();
const chunks = text
  .split('\n')
  .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
  .map((l) => JSON.parse(l.slice(6)));
if (
  stream.status !== 200 ||
  !stream.headers.get('content-type')?.startsWith('text/event-stream') ||
  !text.trimEnd().endsWith('data: [DONE]') ||
  chunks.length < 2
)
  fail(`streamed chat completion: ${stream.status} ${text.slice(0, 300)}`);

const metrics = await fetch(`${base}/metrics`);
const metricsText = await metrics.text();
if (metrics.status !== 200 || !/^hearth_[a-z_]+/m.test(metricsText))
  fail(`/metrics: ${metrics.status} ${metricsText.slice(0, 200)}`);
const requests = /^hearth_http_requests_total\{[^}]*chat[^}]*\} (\d+)/m.exec(metricsText);

console.log(
  `image: model ready (/health 200) ${coldMs} ms after the container started; front ${front}; chat ${chatBody.usage.completion_tokens} tokens; stream ${chunks.length} chunks; /metrics ${metricsText.split('\n').length} lines${requests ? '' : ''}`,
);
