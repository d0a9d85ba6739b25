import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { hubEndpoint, hubUnreachableReason, type HubProbe } from '../../../src/engine/hub-reachability.ts';
import { ModelPullError, pullModel } from '../../../src/engine/model-source.ts';

/** The check before a hub pull: an offline machine fails at once with the reason (issue: "offline start hides the cause"). */
const notFound: HubProbe = {
  lookup: () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND huggingface.co'), { code: 'ENOTFOUND' })),
  connect: () => Promise.reject(new Error('connect must not be tried without an address')),
};

describe('hubEndpoint', () => {
  it('follows node-llama-cpp: MODEL_ENDPOINT, then HF_ENDPOINT, else huggingface.co:443', () => {
    expect(hubEndpoint({})).toEqual({ host: 'huggingface.co', port: 443 });
    expect(hubEndpoint({ HF_ENDPOINT: 'http://mirror.lan:8080/' })).toEqual({ host: 'mirror.lan', port: 8080 });
    expect(hubEndpoint({ HF_ENDPOINT: 'http://mirror.lan' })).toEqual({ host: 'mirror.lan', port: 80 });
    expect(hubEndpoint({ HF_ENDPOINT: 'https://[::1]:9/', MODEL_ENDPOINT: 'not a url' })).toEqual({
      host: '::1',
      port: 9,
    });
    expect(hubEndpoint({ HF_ENDPOINT: 'https://b.example/', MODEL_ENDPOINT: 'https://a.example/' })).toEqual({
      host: 'a.example',
      port: 443,
    });
  });
});

describe('hubUnreachableReason', () => {
  it('a host that cannot be resolved: the host and the resolver code', async () => {
    expect(await hubUnreachableReason({ host: 'huggingface.co', port: 443 }, { env: {}, probe: notFound })).toBe(
      'cannot resolve host huggingface.co (ENOTFOUND): no network or DNS',
    );
  });

  it('a port that refuses: the host, port and code, through the real socket', async () => {
    const port = await closedLoopbackPort();
    expect(await hubUnreachableReason({ host: '127.0.0.1', port }, { env: {} })).toBe(
      `cannot reach 127.0.0.1:${port} (ECONNREFUSED)`,
    );
  });

  it('a host that answers: null', async () => {
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      expect(
        await hubUnreachableReason(
          { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port },
          { env: {} },
        ),
      ).toBeNull();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('with a proxy configured nothing is checked (the proxy reaches the hub)', async () => {
    expect(
      await hubUnreachableReason(
        { host: 'huggingface.co', port: 443 },
        { env: { HTTPS_PROXY: 'http://proxy:3128' }, probe: notFound },
      ),
    ).toBeNull();
  });
});

describe('pullModel on an unreachable hub', () => {
  it('rejects at once with a ModelPullError whose message names the reason and a command that runs as typed', async () => {
    const err = await pullModel(
      { kind: 'hub', uri: 'hf:someone/tiny-GGUF/tiny.gguf', modelId: 'someone/tiny' },
      { modelsDir: '/nonexistent/never-made', onProgress: () => {}, probe: notFound },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelPullError);
    const e = err as ModelPullError;
    expect(e.unreachable).toBe('cannot resolve host huggingface.co (ENOTFOUND): no network or DNS');
    expect(e.message).toContain(
      'could not pull hf:someone/tiny-GGUF/tiny.gguf: cannot resolve host huggingface.co (ENOTFOUND)',
    );
    expect(e.message).toContain('npm start -- --model path/to/model.gguf');
  });
});

async function closedLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
