// The network side of a model pull (model-source.ts pullModel), in a worker thread: node-llama-cpp's downloader
// retries unreachable hosts on its own timers (async-retry, up to minutes) and takes no signal while it is being
// created, so an abandoned pull kept the event loop busy after a clean stop. Ending this thread ends all of it.
// Messages out: {type: 'progress', downloadedBytes, totalBytes}, {type: 'done', path}, {type: 'error', message}.
// Message in: 'cancel': the download (once it exists) is cancelled, its partial file kept under its temporary name
// for the next start to resume, and the thread ends.
import { parentPort, workerData } from 'node:worker_threads';
import { createModelDownloader } from 'node-llama-cpp';

const { uri, dirPath, showCliProgress } = workerData;
let downloader;
let cancelling = false;

parentPort.on('message', async (m) => {
  if (m !== 'cancel' || cancelling) return;
  cancelling = true;
  if (downloader) await downloader.cancel({ deleteTempFile: false }).catch(() => {});
  process.exit(0); // in a worker: ends this thread, its timers and sockets with it
});

try {
  downloader = await createModelDownloader({
    modelUri: uri,
    dirPath,
    showCliProgress,
    deleteTempFileOnCancel: false,
    onProgress: (s) =>
      parentPort.postMessage({ type: 'progress', downloadedBytes: s.downloadedSize, totalBytes: s.totalSize }),
  });
  if (!cancelling) {
    const path = await downloader.download();
    parentPort.postMessage({ type: 'done', path });
  }
} catch (err) {
  if (!cancelling) parentPort.postMessage({ type: 'error', message: err instanceof Error ? err.message : String(err) });
}
